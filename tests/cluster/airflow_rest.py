"""A person's view of the bed's Airflow, through its REST API (run on a host of the bed):

    python -m tests.cluster.airflow_rest run DAG_ID [--timeout S]
    python -m tests.cluster.airflow_rest trigger DAG_ID
    python -m tests.cluster.airflow_rest tasks DAG_ID --run RUN_ID
    python -m tests.cluster.airflow_rest wait DAG_ID --run RUN_ID [--timeout S]

`run` waits until the DAG is parsed, triggers a run, waits (bounded) for its end, and prints
one JSON object: the run's id and state, and for each task its state, try number, host name,
start and end times, returned value (XCom `return_value`) and extra links (name -> URL).
`trigger` prints the new run's id; `tasks` the run's tasks as they are now; `wait` what `run`
prints, for a run triggered before."""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

import httpx

FINAL = {"success", "failed"}


class AirflowRest:
    def __init__(self, base_url: str) -> None:
        token = httpx.get(f"{base_url}/auth/token", timeout=30).json()["access_token"]
        self.http = httpx.Client(
            base_url=f"{base_url}/api/v2",
            headers={"Authorization": f"Bearer {token}"},
            timeout=30,
        )

    def get(self, path: str) -> Any:
        response = self.http.get(path)
        response.raise_for_status()
        return response.json()

    def wait_parsed(self, dag_id: str, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        for _ in range(int(timeout_s) + 1):
            if self.http.get(f"/dags/{dag_id}").status_code == 200:
                return
            if time.monotonic() > deadline:
                break
            time.sleep(1)
        raise TimeoutError(f"{dag_id} was not parsed in {timeout_s:g}s")

    def trigger(self, dag_id: str) -> str:
        response = self.http.post(f"/dags/{dag_id}/dagRuns", json={"logical_date": None})
        response.raise_for_status()
        return str(response.json()["dag_run_id"])

    def wait_run(self, dag_id: str, run_id: str, timeout_s: float) -> str:
        deadline = time.monotonic() + timeout_s
        state = "unknown"
        for _ in range(int(timeout_s / 2) + 1):
            state = self.get(f"/dags/{dag_id}/dagRuns/{run_id}")["state"]
            if state in FINAL or time.monotonic() > deadline:
                break
            time.sleep(2)
        return str(state)

    def tasks(self, dag_id: str, run_id: str) -> dict[str, dict[str, Any]]:
        found = self.get(f"/dags/{dag_id}/dagRuns/{run_id}/taskInstances")["task_instances"]
        tasks: dict[str, dict[str, Any]] = {}
        for ti in found:
            task_id = ti["task_id"]
            tasks[task_id] = {
                key: ti.get(key)
                for key in ("state", "try_number", "hostname", "start_date", "end_date")
            }
            if ti.get("state") == "success":
                tasks[task_id]["value"] = self.xcom(dag_id, run_id, task_id)
            tasks[task_id]["links"] = self.links(dag_id, run_id, task_id)
        return tasks

    def links(self, dag_id: str, run_id: str, task_id: str) -> dict[str, str | None]:
        """The task instance's extra links as the UI shows them (name -> URL)."""
        found = self.get(f"/dags/{dag_id}/dagRuns/{run_id}/taskInstances/{task_id}/links")
        return dict(found.get("extra_links") or {})

    def xcom(self, dag_id: str, run_id: str, task_id: str) -> Any:
        path = f"/dags/{dag_id}/dagRuns/{run_id}/taskInstances/{task_id}/xcomEntries/return_value"
        response = self.http.get(path)
        if response.status_code == 404:
            return None
        response.raise_for_status()
        value = response.json().get("value")
        if isinstance(value, str):
            try:
                return json.loads(value)
            except json.JSONDecodeError:
                return value
        return value


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("action", choices=["run", "trigger", "tasks", "wait"])
    parser.add_argument("dag_id")
    parser.add_argument("--run", default="")
    parser.add_argument("--api", default="http://airflow:8080")
    parser.add_argument("--timeout", type=float, default=600)
    args = parser.parse_args(argv)
    rest = AirflowRest(args.api)
    if args.action == "tasks":
        print(json.dumps(rest.tasks(args.dag_id, args.run)))
        return 0
    started = time.monotonic()
    if args.action == "wait":
        run_id = args.run
    else:
        rest.wait_parsed(args.dag_id, 180)
        run_id = rest.trigger(args.dag_id)
    if args.action == "trigger":
        print(json.dumps({"run_id": run_id}))
        return 0
    state = rest.wait_run(args.dag_id, run_id, args.timeout)
    took = time.monotonic() - started
    tasks = rest.tasks(args.dag_id, run_id)
    print(json.dumps({"run_id": run_id, "state": state, "seconds": took, "tasks": tasks}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
