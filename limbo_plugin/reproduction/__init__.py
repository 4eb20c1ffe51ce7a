"""The paper's study end to end (``limbo reproduce``): its design, its runs, its steps."""
