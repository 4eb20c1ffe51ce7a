"""Grading from the ledger and final state only, and coding of the recovery behaviour."""

from limbo_plugin.grading.behaviour import BEHAVIOURS, code_behaviour
from limbo_plugin.grading.grader import Grade, grade

__all__ = ["BEHAVIOURS", "Grade", "code_behaviour", "grade"]
