"""deepeval: N test cases, each from a scripted agent loop that makes the four tool calls of
:mod:`plan` against the in-process tools (each call and the loop traced with ``@observe``),
evaluated by ``evaluate`` with a trivial metric (the four tools were called) and its cache off.
``python deepeval_task.py N`` (run with ``DEEPEVAL_TELEMETRY_OPT_OUT=YES``)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import plan
from deepeval import evaluate
from deepeval.evaluate.configs import AsyncConfig, CacheConfig, DisplayConfig
from deepeval.metrics import BaseMetric
from deepeval.test_case import LLMTestCase, ToolCall
from deepeval.tracing import observe


class FourToolsCalled(BaseMetric):  # type: ignore[misc]
    """1.0 when the case called the plan's four tools, in order; no model judges it."""

    def __init__(self) -> None:
        self.threshold = 1.0

    def measure(self, test_case: LLMTestCase, *args: Any, **kwargs: Any) -> float:
        called = [c.name for c in test_case.tools_called or []]
        self.score = float(called == [name for name, _ in plan.PLAN])
        self.success = self.score >= self.threshold
        return self.score

    async def a_measure(self, test_case: LLMTestCase, *args: Any, **kwargs: Any) -> float:
        return self.measure(test_case)

    def is_successful(self) -> bool:
        return bool(self.success)

    @property
    def __name__(self) -> str:  # type: ignore[override]
        return "FourToolsCalled"


@observe(type="tool")
def call_tool(name: str, arguments: dict[str, Any]) -> str:
    return plan.TOOLS[name](**arguments)


@observe(type="agent")
def run_agent(prompt: str) -> tuple[str, list[ToolCall]]:
    calls = [ToolCall(name=name, input_parameters=arguments,
                      output=call_tool(name, arguments)) for name, arguments in plan.PLAN]
    return plan.FINAL, calls


def main() -> None:
    samples = int(sys.argv[1])
    cases = []
    for _ in range(samples):
        output, calls = run_agent(plan.PROMPT)
        cases.append(LLMTestCase(input=plan.PROMPT, actual_output=output, tools_called=calls))
    result = evaluate(cases, [FourToolsCalled()],
                      cache_config=CacheConfig(write_cache=False, use_cache=False),
                      display_config=DisplayConfig(show_indicator=False, print_results=False),
                      async_config=AsyncConfig(run_async=True))
    failed = [r for r in result.test_results if not r.success]
    if len(result.test_results) != samples or failed:
        raise SystemExit(f"deepeval: {len(result.test_results)} result(s), "
                         f"{len(failed)} failed")
    plan.check(samples)


if __name__ == "__main__":
    main()
