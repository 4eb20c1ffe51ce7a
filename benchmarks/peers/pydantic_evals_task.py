"""pydantic-evals: a Dataset of N cases whose task runs a pydantic-ai Agent on a
``FunctionModel`` that makes the four tool calls of :mod:`plan` (decided from the conversation
so far), then answers; the ``EqualsExpected`` evaluator scores each case.
``python pydantic_evals_task.py N``."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import plan
from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelMessage,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_evals import Case, Dataset
from pydantic_evals.evaluators import EqualsExpected


def scripted(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    done = sum(1 for m in messages for p in m.parts if isinstance(p, ToolReturnPart))
    if done < len(plan.PLAN):
        name, arguments = plan.PLAN[done]
        return ModelResponse(parts=[ToolCallPart(name, arguments)])
    return ModelResponse(parts=[TextPart(plan.FINAL)])


agent: Agent[None, str] = Agent(FunctionModel(scripted))
for tool in plan.TOOLS.values():
    agent.tool_plain(tool)


async def task(inputs: str) -> Any:
    return (await agent.run(inputs)).output


def main() -> None:
    samples = int(sys.argv[1])
    dataset: Dataset[str, Any, Any] = Dataset(
        name="four-tool-calls",
        cases=[Case(name=f"case-{i}", inputs=plan.PROMPT, expected_output=plan.FINAL)
               for i in range(samples)],
        evaluators=[EqualsExpected()])
    report = dataset.evaluate_sync(task, progress=False)
    failed = [c.name for c in report.cases if not all(a.value for a in c.assertions.values())]
    if report.failures or failed:
        raise SystemExit(f"pydantic-evals: {len(report.failures)} failure(s), {failed[:3]}")
    plan.check(samples)


if __name__ == "__main__":
    main()
