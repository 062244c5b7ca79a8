#!/usr/bin/env bash
# The release artifacts (make dist): wheel and sdist of the provider (airflow-provider-kafkaspark)
# and of the dev stack (devstack/), built with `python -m build` into OUT (default dist/), then
# `twine check --strict` and the contents a release must have: the provider's wheel without
# tests/ or the dev stack, LICENSE and NOTICE in every artifact, and the provider's entry points.
#
#   bash scripts/dist.sh [OUT]    # or KAFKASPARK_DIST_DIR=OUT; PYTHON: the interpreter with
#                                 # build and twine (the dev extra), .venv/bin/python by default
#
# Each distribution builds from a copy of its sources (setuptools writes build/ and *.egg-info
# next to them, and the dev stack's copy gets the root's LICENSE and NOTICE), without build
# isolation: this environment's setuptools, no download. Prints one line per artifact (name,
# size in kB); on a problem, one line naming it, and exits 1 with OUT left as it was.
set -euo pipefail

# Paths given relative to the caller's folder (a venv's python stays the venv's: -s).
out="${1:-${KAFKASPARK_DIST_DIR:-}}"
[ -z "$out" ] || out="$(realpath -m "$out")"
python="${PYTHON:-}"
[[ "$python" != */* ]] || python="$(realpath -ms "$python")"
cd "$(dirname "$0")/.."
root="$PWD"
out="${out:-$root/dist}"
python="${python:-$root/.venv/bin/python}"

fail() {
  echo "dist: $*" >&2
  exit 1
}

[ -x "$python" ] || command -v "$python" >/dev/null 2>&1 || fail "no Python at $python: run make setup"
"$python" -c 'import build, twine' 2>/dev/null \
  || fail "build and twine are missing from $python: run make setup (the dev extra has them)"
for name in LICENSE NOTICE; do
  [ -f "$name" ] || fail "$name is missing at the repository's root"
done

work="$(mktemp -d "${TMPDIR:-/tmp}/kafkaspark-dist.XXXXXX")"
log="$work/dist.log"
# Kept when something failed: the one-line message names its log or the artifacts.
trap 'status=$?; [ "$status" -ne 0 ] || rm -rf "$work"' EXIT

copy_package() { # copy_package FROM_DIR PACKAGE TO_DIR: the package's files, no caches
  tar -C "$1" --exclude=__pycache__ --exclude='*.py[co]' --exclude='*.egg-info' -cf - "$2" \
    | tar -C "$3" -xf -
}

src="$work/src"
mkdir -p "$src/provider" "$src/devstack" "$work/out"
cp pyproject.toml README.md "$src/provider/"
copy_package "$root" airflow_provider_kafkaspark "$src/provider"
cp devstack/pyproject.toml "$src/devstack/"
copy_package "$root/devstack" kafkaspark_devstack "$src/devstack"
cp LICENSE NOTICE "$src/provider/"
cp LICENSE NOTICE "$src/devstack/"

# sdist first, then the wheel built from that sdist: the wheel holds only what the sdist does.
for dist in provider devstack; do
  echo "== python -m build $dist" >>"$log"
  "$python" -m build --no-isolation --outdir "$work/out" "$src/$dist" >>"$log" 2>&1 \
    || fail "python -m build failed for the $dist distribution (log: $log)"
done

echo "== twine check --strict" >>"$log"
# Wide columns: twine's console would wrap each message at 80.
if ! COLUMNS=500 "$python" -m twine --no-color check --strict "$work/out"/* >>"$log" 2>&1; then
  failed="$(sed -n 's|^Checking .*/\([^/]*\): FAILED.*|\1|p' "$log" | head -n1)"
  problem="$(grep -m1 -E '^(ERROR|WARNING)' "$log" | tr -s ' ' | sed 's/ *$//' || true)"
  fail "twine check --strict failed for ${failed:-an artifact}: ${problem:-see the log} (log: $log)"
fi

# The contents; the first problem found is the one line printed.
"$python" - "$work/out" "$src/provider/airflow_provider_kafkaspark/__init__.py" <<'PY'
import ast
import configparser
import sys
import tarfile
import zipfile
from pathlib import Path

out, init = Path(sys.argv[1]), Path(sys.argv[2])
PROVIDER, DEVSTACK = "airflow_provider_kafkaspark", "airflow_provider_kafkaspark_devstack"


def fail(message: str) -> None:
    print(f"dist: {message} (artifacts: {out})", file=sys.stderr)
    sys.exit(1)


def one(pattern: str) -> Path:
    found = sorted(out.glob(pattern))
    if len(found) != 1:
        built = ", ".join(sorted(p.name for p in out.iterdir())) or "nothing"
        fail(f"expected one {pattern} (built: {built})")
    return found[0]


def check_wheel(path: Path, package: str, entry_points: dict[str, str]) -> list[str]:
    with zipfile.ZipFile(path) as archive:
        names = archive.namelist()
        dist_info = "-".join(path.name.split("-")[:2]) + ".dist-info"
        for license_file in ("LICENSE", "NOTICE"):
            if f"{dist_info}/licenses/{license_file}" not in names:
                fail(f"{path.name} lacks {license_file} ({dist_info}/licenses/)")
        if not any(n.startswith(f"{package}/") for n in names):
            fail(f"{path.name} lacks its package {package}/")
        parser = configparser.ConfigParser(delimiters=("=",), interpolation=None)
        if f"{dist_info}/entry_points.txt" in names:
            parser.read_string(archive.read(f"{dist_info}/entry_points.txt").decode())
    for group, name in entry_points.items():
        if not parser.has_option(group, name):
            fail(f"{path.name} lacks the entry point {name} in [{group}] of entry_points.txt")
    return names


def check_sdist(path: Path) -> list[str]:
    top = path.name.removesuffix(".tar.gz")
    with tarfile.open(path) as archive:
        names = [n.removeprefix(f"{top}/") for n in archive.getnames()]
    for license_file in ("LICENSE", "NOTICE"):
        if license_file not in names:
            fail(f"{path.name} lacks {license_file}")
    return names


# The provider's version is __version__ (pyproject.toml reads it): its artifacts carry it.
version = next(
    node.value.value
    for node in ast.parse(init.read_text()).body
    if isinstance(node, ast.Assign)
    and any(isinstance(t, ast.Name) and t.id == "__version__" for t in node.targets)
    and isinstance(node.value, ast.Constant)
)
wheel = one(f"{PROVIDER}-{version}-py3-none-any.whl")
names = check_wheel(
    wheel,
    PROVIDER,
    {
        "apache_airflow_provider": "provider_info",
        "airflow.plugins": "kafkaspark_streaming_jobs",
        "console_scripts": "kafkaspark",
    },
)
if any(n.startswith("tests/") for n in names):
    fail(f"{wheel.name} holds tests/")
if any("kafkaspark_devstack" in n for n in names):
    fail(f"{wheel.name} holds the dev stack (kafkaspark_devstack)")
if not any(n.startswith(f"{PROVIDER}/plugins/jobs_view/templates/") for n in names):
    fail(f"{wheel.name} lacks the Streaming jobs view's templates")
sdist = one(f"{PROVIDER}-{version}.tar.gz")
if any(n.startswith(("tests/", "kafkaspark_devstack/")) for n in check_sdist(sdist)):
    fail(f"{sdist.name} holds tests/ or the dev stack")

# The dev stack's version is its own (devstack/pyproject.toml).
wheel = one(f"{DEVSTACK}-*-py3-none-any.whl")
names = check_wheel(wheel, "kafkaspark_devstack", {"kafkaspark.cli": "local"})
if any(n.startswith(f"{PROVIDER}/") for n in names):
    fail(f"{wheel.name} holds the provider's package")
check_sdist(one(f"{DEVSTACK}-*.tar.gz"))
PY

# Checked: they replace the artifacts of an earlier run in OUT, and each gets its line.
mkdir -p "$out"
rm -f "$out"/airflow_provider_kafkaspark-*.whl "$out"/airflow_provider_kafkaspark-*.tar.gz \
  "$out"/airflow_provider_kafkaspark_devstack-*.whl "$out"/airflow_provider_kafkaspark_devstack-*.tar.gz
for path in "$work/out"/*; do
  mv "$path" "$out/"
  printf '%-60s %8s kB\n' "$(basename "$path")" \
    "$(awk -v b="$(stat -c %s "$out/$(basename "$path")")" 'BEGIN { printf "%.1f", b / 1000 }')"
done
