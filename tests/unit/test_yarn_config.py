"""What the local YARN daemons are told, read from the files without starting them."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from kafkaspark_devstack import jars
from kafkaspark_devstack.yarn_config import (
    MAX_AM_ATTEMPTS,
    HaLayout,
    NodeLayout,
    NodeManagerPorts,
    ResourceManagerPorts,
    s3a_site,
    site_xml,
    write_conf_dir,
    zookeeper_cfg,
)

RM = ResourceManagerPorts(client=18032, scheduler=18030, tracker=18031, admin=18033, web=18088)
NM = NodeManagerPorts(containers=45454, localizer=18040, web=18042)


def properties(path: Path) -> dict[str, str]:
    root = ET.parse(path).getroot()
    return {p.findtext("name") or "": p.findtext("value") or "" for p in root.iter("property")}


def test_a_node_and_the_clients_agree_on_where_the_resource_manager_is(tmp_path: Path) -> None:
    node = NodeLayout("10.9.0.3", NM, tmp_path / "local", tmp_path / "logs", 4096, 2)
    client = properties(
        write_conf_dir(tmp_path / "c", "10.9.0.2", RM, tmp_path, None) / "yarn-site.xml"
    )
    nm = properties(
        write_conf_dir(tmp_path / "n", "10.9.0.2", RM, tmp_path, node) / "yarn-site.xml"
    )
    for name in ("address", "scheduler.address", "resource-tracker.address", "webapp.address"):
        key = f"yarn.resourcemanager.{name}"
        assert client[key] == nm[key] and client[key].startswith("10.9.0.2:")
    assert nm["yarn.nodemanager.address"] == "10.9.0.3:45454"
    assert nm["yarn.nodemanager.resource.memory-mb"] == "4096"
    assert nm["yarn.nodemanager.local-dirs"] == str(tmp_path / "local")
    # A PySpark driver's Python process counts against its container: no memory kills.
    assert nm["yarn.nodemanager.pmem-check-enabled"] == "false"
    assert nm["yarn.nodemanager.vmem-check-enabled"] == "false"
    assert "yarn.nodemanager.address" not in client
    # Spark's maxAppAttempts is clamped to the RM's cap.
    assert int(client["yarn.resourcemanager.am.max-attempts"]) == MAX_AM_ATTEMPTS > 2


def test_the_scheduler_has_a_queue_and_the_default_file_system_is_local(tmp_path: Path) -> None:
    conf = write_conf_dir(tmp_path / "c", "127.0.0.1", RM, tmp_path / "tmp", None)
    scheduler = properties(conf / "capacity-scheduler.xml")
    assert scheduler["yarn.scheduler.capacity.root.queues"] == "default"
    assert float(scheduler["yarn.scheduler.capacity.maximum-am-resource-percent"]) > 0.1
    assert properties(conf / "core-site.xml")["fs.defaultFS"] == "file:///"
    assert (conf / "log4j.properties").read_text().startswith("log4j.rootLogger=")


def test_values_are_escaped() -> None:
    text = site_xml({"a<b": "x&y", "flag": True})
    root = ET.fromstring(text)
    assert [(p.findtext("name"), p.findtext("value")) for p in root.iter("property")] == [
        ("a<b", "x&y"),
        ("flag", "true"),
    ]


def test_the_yarn_jars_are_resolved_only_when_asked_for() -> None:
    assert "yarn" in jars.BUNDLES and "yarn" not in jars.DEFAULT_BUNDLES
    artifacts = jars.BUNDLES["yarn"][0]
    assert all(a.endswith(":3.4.1") for a in artifacts)
    assert any("resourcemanager" in a for a in artifacts)
    assert any("nodemanager" in a for a in artifacts)


def test_a_staging_folder_on_s3_reaches_hadoop_with_its_keys_private(tmp_path: Path) -> None:
    spark = {
        "spark.hadoop.fs.s3a.endpoint": "http://10.77.0.1:8333",
        "spark.hadoop.fs.s3a.path.style.access": "true",
        "spark.sql.streaming.checkpointFileManagerClass": "x",
    }
    site = {**s3a_site(spark), "fs.s3a.secret.key": "s3cret"}
    assert set(site) == {"fs.s3a.endpoint", "fs.s3a.path.style.access", "fs.s3a.secret.key"}
    ports = ResourceManagerPorts.hadoop_defaults()
    assert (ports.client, ports.tracker, ports.web) == (8032, 8031, 8088)
    conf = write_conf_dir(tmp_path / "c", "10.77.0.3", ports, tmp_path / "t", None, site)
    core = conf / "core-site.xml"
    assert core.stat().st_mode & 0o777 == 0o600
    values = {p.findtext("name"): p.findtext("value") for p in ET.parse(core).getroot()}
    assert values["fs.s3a.secret.key"] == "s3cret" and values["fs.defaultFS"] == "file:///"


RM2 = ResourceManagerPorts(client=28032, scheduler=28030, tracker=28031, admin=28033, web=28088)
HA = HaLayout(rms=(("rm1", RM), ("rm2", RM2)), zk_address="127.0.0.1:12181")


def test_with_ha_every_daemon_and_client_knows_both_rms_and_each_rm_its_own_id(
    tmp_path: Path,
) -> None:
    node = NodeLayout("127.0.0.1", NM, tmp_path / "local", tmp_path / "logs")
    files = {
        "client": write_conf_dir(tmp_path / "c", "127.0.0.1", RM, tmp_path, None, None, HA),
        "nm": write_conf_dir(tmp_path / "n", "127.0.0.1", RM, tmp_path, node, None, HA),
        "rm1": write_conf_dir(tmp_path / "1", "127.0.0.1", RM, tmp_path, None, None, HA, "rm1"),
        "rm2": write_conf_dir(tmp_path / "2", "127.0.0.1", RM, tmp_path, None, None, HA, "rm2"),
    }
    sites = {name: properties(conf / "yarn-site.xml") for name, conf in files.items()}
    for site in sites.values():
        assert site["yarn.resourcemanager.ha.enabled"] == "true"
        assert site["yarn.resourcemanager.ha.rm-ids"] == "rm1,rm2"
        assert site["yarn.resourcemanager.webapp.address.rm1"] == "127.0.0.1:18088"
        assert site["yarn.resourcemanager.resource-tracker.address.rm2"] == "127.0.0.1:28031"
        assert site["hadoop.zk.address"] == "127.0.0.1:12181"
        # No one-RM address left to mislead a client that would read it.
        assert "yarn.resourcemanager.address" not in site
    assert sites["rm1"]["yarn.resourcemanager.ha.id"] == "rm1"
    assert sites["rm2"]["yarn.resourcemanager.ha.id"] == "rm2"
    assert "yarn.resourcemanager.ha.id" not in sites["client"]
    assert "yarn.resourcemanager.ha.id" not in sites["nm"]
    rm = sites["rm1"]
    assert rm["yarn.resourcemanager.recovery.enabled"] == "true"
    assert rm["yarn.resourcemanager.work-preserving-recovery.enabled"] == "true"
    assert rm["yarn.resourcemanager.store.class"].endswith("recovery.ZKRMStateStore")
    assert rm["yarn.resourcemanager.ha.automatic-failover.embedded"] == "true"


def test_without_ha_no_ha_key_is_written(tmp_path: Path) -> None:
    site = properties(write_conf_dir(tmp_path, "127.0.0.1", RM, tmp_path, None) / "yarn-site.xml")
    assert not [k for k in site if ".ha." in k or k.startswith("hadoop.zk")]
    assert site["yarn.resourcemanager.webapp.address"] == "127.0.0.1:18088"
    # One RM restarts from its own store, keeping the running containers.
    assert site["yarn.resourcemanager.recovery.enabled"] == "true"
    assert site["yarn.resourcemanager.store.class"].endswith("recovery.FileSystemRMStateStore")
    assert site["yarn.resourcemanager.work-preserving-recovery.enabled"] == "true"


def test_zookeeper_listens_where_told_and_keeps_its_data_in_the_folder(tmp_path: Path) -> None:
    cfg = dict(
        line.split("=", 1) for line in zookeeper_cfg("127.0.0.1", 12181, tmp_path).splitlines()
    )
    assert (cfg["clientPortAddress"], cfg["clientPort"]) == ("127.0.0.1", "12181")
    assert cfg["dataDir"] == str(tmp_path) and cfg["admin.enableServer"] == "false"
