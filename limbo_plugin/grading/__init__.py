"""Grading from the ledger and final state only, and coding of the recovery behaviour."""

from limbo_plugin.grading.behaviour import BEHAVIOURS, code_behaviour, explicit_refusal
from limbo_plugin.grading.grader import grade
from limbo_plugin.records import Grade

__all__ = ["BEHAVIOURS", "Grade", "code_behaviour", "explicit_refusal", "grade"]
