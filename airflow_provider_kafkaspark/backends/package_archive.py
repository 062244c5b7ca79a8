"""The provider's own code as one zip for `--py-files`: a cluster's containers import it from
there (driver and executors alike), so its nodes need only the driver's dependencies
installed, and every submit runs the code of the Airflow host that submitted it."""

from __future__ import annotations

import zipfile
from pathlib import Path

import airflow_provider_kafkaspark

# Fixed entry times: the same code gives the same bytes (cluster caches key on content).
_EPOCH = (1980, 1, 1, 0, 0, 0)


def package_zip(folder: str | Path) -> Path:
    """Zip the installed package (from a wheel or a checkout alike) into `folder`."""
    root = Path(airflow_provider_kafkaspark.__file__).resolve().parent
    target = Path(folder) / f"{root.name}.zip"
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(root.rglob("*")):
            if not path.is_file() or "__pycache__" in path.parts or path.suffix == ".pyc":
                continue
            entry = zipfile.ZipInfo(str(path.relative_to(root.parent)), _EPOCH)
            entry.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(entry, path.read_bytes())
    return target
