"""inspect_ai: N samples, each solved by ``mockllm/model`` whose custom outputs are the four
tool calls of :mod:`plan` (decided from the conversation so far), then a final answer scored by
``match()``. ``python inspect_task.py N LOG_DIR [--no-live-log]``."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import plan
from inspect_ai import Task, eval
from inspect_ai.dataset import Sample
from inspect_ai.model import ChatMessageTool, ModelOutput, ModelUsage, get_model
from inspect_ai.scorer import match
from inspect_ai.solver import generate, use_tools
from inspect_ai.tool import tool


@tool
def x_publish() -> Any:
    async def execute(text: str) -> str:
        """Publish a post on X.

        Args:
            text: The post's text.
        """
        return plan.x_publish(text)
    return execute


@tool
def mastodon_publish() -> Any:
    async def execute(text: str) -> str:
        """Publish a post on Mastodon.

        Args:
            text: The post's text.
        """
        return plan.mastodon_publish(text)
    return execute


@tool
def email_send() -> Any:
    async def execute(to: str, subject: str, body: str) -> str:
        """Send an e-mail.

        Args:
            to: The recipient.
            subject: The subject line.
            body: The message.
        """
        return plan.email_send(to, subject, body)
    return execute


@tool
def finish() -> Any:
    async def execute(status: str, summary: str, uncertain_operations: list[str]) -> str:
        """Report the task's outcome.

        Args:
            status: completed or failed.
            summary: What was done.
            uncertain_operations: Operations whose outcome is unknown.
        """
        return plan.finish(status, summary, uncertain_operations)
    return execute


def scripted(messages: list[Any], tools: Any, tool_choice: Any, config: Any) -> ModelOutput:
    done = sum(1 for m in messages if isinstance(m, ChatMessageTool))
    if done < len(plan.PLAN):
        name, arguments = plan.PLAN[done]
        output = ModelOutput.for_tool_call("mockllm/model", name, arguments)
    else:
        output = ModelOutput.from_content("mockllm/model", plan.FINAL)
    # the usage a real model reports; without it mockllm counts tokens with tiktoken, whose
    # encoding it would download
    output.usage = ModelUsage(input_tokens=900, output_tokens=70, total_tokens=970)
    return output


def main() -> None:
    samples, log_dir = int(sys.argv[1]), sys.argv[2]
    task = Task(dataset=[Sample(input=plan.PROMPT, target=plan.FINAL, id=i)
                         for i in range(samples)],
                solver=[use_tools([x_publish(), mastodon_publish(), email_send(), finish()]),
                        generate()],
                scorer=match())
    logs = eval(task, model=get_model("mockllm/model", custom_outputs=scripted),
                log_dir=log_dir, display="none",
                log_realtime=False if "--no-live-log" in sys.argv else None)
    if logs[0].status != "success":
        message = logs[0].error.message if logs[0].error else ""
        raise SystemExit(f"inspect_ai eval: {logs[0].status}: {message[:500]}")
    plan.check(samples)


if __name__ == "__main__":
    main()
