"""An agent that forks: the child that returns out of the agent ends there, so the run has one
record per episode — serially and under ``-n 2`` — and no second pytest session writes."""

from __future__ import annotations

import json

import pytest

FORKING_AGENT = """\
import os


class Forks:
    name = "forks"

    def run(self, session):
        child = os.fork()
        if child == 0:
            return  # the child returns out of the agent, as a careless helper process would
        os.waitpid(child, 0)
        session.call("finish", {"status": "completed", "summary": "done",
                                "uncertain_operations": []})
"""


@pytest.mark.slow
@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_a_forked_child_leaving_the_agent_writes_nothing(project: pytest.Pytester,
                                                         workers: list[str]) -> None:
    (project.path / "forking_agent.py").write_text(FORKING_AGENT)
    result = project.runpytest_subprocess(
        "--experiment", "small", "-k", "incident_open and (lost_ack or late_commit)",
        "--agent", "python:forking_agent:Forks", "--tb=short", *workers)
    output = result.stdout.str() + result.stderr.str()
    assert "INTERNALERROR" not in output, output[-3000:]
    lines = (project.path / "reports" / "episodes.jsonl").read_text().splitlines()
    ids = [json.loads(line)["test_id"] for line in lines]
    assert len(ids) == len(set(ids)) == 2, ids
    assert output.count(" passed") + output.count(" failed") <= 2, output[-2000:]
