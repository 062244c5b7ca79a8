"""One bed for the fault scenarios (tests/faults): S3 (its bucket versioned, so the lease
file's every write is kept), Kafka, two driver hosts and an Airflow worker's host, each in
namespaces of its own. Started once for the tier; before each scenario the bed is checked
clean of any fault an earlier one made, and after it every fault is healed."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from kafkaspark_devstack.faults import Faults
from kafkaspark_devstack.netbed import NetBed
from tests.cluster.bed_stack import BedStack
from tests.faults.scenario import HOSTS, enable_versions


@pytest.fixture(scope="session")
def fault_bed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BedStack]:
    base: Path = tmp_path_factory.mktemp("faultbed")
    with NetBed(base / "bed", HOSTS, prefix="ksf") as bed:
        stack = BedStack(bed)
        stack.start_s3("s3")
        stack.start_kafka("kafka")
        enable_versions(stack)
        yield stack


@pytest.fixture
def faults(fault_bed: BedStack) -> Iterator[Faults]:
    with Faults(fault_bed.bed) as injected:
        injected.check_clean(HOSTS)
        yield injected
