"""What a run will cost before it runs: ``limbo plan``'s budget (:mod:`.cost`), the terminal's
estimate before the first episode, and the measured usage of a pilot run or a cassette that
replaces the paper's figures (:mod:`.measured`)."""
