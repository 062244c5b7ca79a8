# The two commands a newcomer needs: `make demo` and `make test` (each sets up first).
VENV := .venv
PY := $(VENV)/bin/python

.PHONY: setup setup-matrix test-matrix test-extended setup-ui test-ui setup-faults e2e-faults setup-cluster setup-k8s e2e-k8s setup-kerberos e2e-kerberos demo demo-s3 test unit integration e2e e2e-cluster lint docs bench chaos chaos-short soak clean dist

setup:
	bash scripts/setup.sh

# The Spark matrix: the Airflow environment (.venv) drives Spark 4.0.0; each release below gets
# a driver environment of its own (.venv-spark-<version>, scripts/driver_env.sh), from which
# the tests that drive Spark run again (the ones that need Airflow, marked `airflow`, run once).
MATRIX_SPARK := 3.5.7
# What depends on the release: the checkpoint's files, the sink's writers and transactions
# (crashes included), a stop's interrupt at a batch boundary, and the stop -> savepoint round.
MATRIX_TESTS := tests/integration/test_checkpoint_savepoint.py \
	tests/integration/test_kafka_sink.py tests/integration/test_sink_slots.py \
	tests/integration/test_runtime.py tests/integration/test_stop_lifecycle.py

setup-matrix: setup
	for v in $(MATRIX_SPARK); do bash scripts/driver_env.sh $$v || exit 1; done

# KAFKASPARK_FAST_JVM: local drivers and brokers start from class archives (see docs/testing.md).
demo: setup
	KAFKASPARK_FAST_JVM=1 $(PY) -m kafkaspark_devstack.demo

# The same story with the checkpoint and savepoints on a local S3 server (SeaweedFS).
demo-s3: setup
	KAFKASPARK_FAST_JVM=1 $(PY) -m kafkaspark_devstack.demo --storage s3

# Lint, the reference site (warnings as errors) and the pure unit tests first: they fail in a
# minute where the rest takes twenty.
# Then the Streaming jobs view in a real browser (tests/ui, about a minute), the real-stack
# tiers on one host, the faults across hosts (tests/faults, root), the
# cluster tier (YARN and Airflow's services across hosts, root), the Spark matrix. Tests
# marked `extended` repeat a path another tier covers: `make test-extended` runs them.
test: setup setup-matrix setup-faults setup-cluster setup-ui lint docs
	$(PY) -m pytest tests/unit -ra -q --durations=5
	$(PY) -m pytest tests/ui -ra --durations=5
	$(PY) -m pytest tests/integration tests/e2e tests/reliability -m "not extended" -ra --durations=25
	$(PY) -m pytest tests/faults -ra --durations=10
	$(PY) -m pytest tests/cluster -m "not extended" -ra --durations=15
	$(MAKE) --no-print-directory test-matrix

test-extended: setup setup-cluster
	$(PY) -m pytest tests/integration tests/e2e tests/reliability tests/cluster -m extended -ra

test-matrix: setup-matrix
	for v in $(MATRIX_SPARK); do echo "== Spark $$v leg"; \
	  .venv-spark-$$v/bin/python -m pytest $(MATRIX_TESTS) -m "not airflow" -ra --durations=10 \
	  || exit 1; done

unit: setup
	$(PY) -m pytest tests/unit -ra

integration: setup setup-matrix
	$(PY) -m pytest tests/integration -ra

e2e: setup
	$(PY) -m pytest tests/e2e -ra

# Faults between hosts of the bed (network and PID namespaces, root): a driver's host cut
# from S3 or Kafka, paused past its lease, clocks ahead and behind (about 6 minutes).
setup-faults: setup
	bash scripts/setup_faults.sh

e2e-faults: setup-faults
	$(PY) -m pytest tests/faults -ra --durations=10

# The cluster stack on top of setup: the YARN daemons' jars (about 80 MB from Maven Central),
# and the bed's Airflow deployment (PostgreSQL, its drivers, the Edge executor).
setup-cluster: setup
	$(PY) -m pip install -q -e ".[dev,cluster]" -e ./devstack
	$(PY) -c 'import pyspark, airflow_provider_kafkaspark.versions as v; assert pyspark.__version__ == v.SPARK_VERSION, pyspark.__version__'
	$(VENV)/bin/kafkaspark local jars resolve --with yarn | sed 's/^/setup: jars /'

# Drivers on a real YARN cluster (ResourceManager and NodeManager from the jars above).
e2e-cluster: setup-cluster
	$(PY) -m pytest tests/cluster -ra

# A local Kubernetes cluster (root): Kubernetes v1.34.4 and etcd built with Go from the module
# proxy (about 8 minutes the first time, 15 s after), the pause and driver images as
# OCI archives (Debian from debootstrap, this environment's pyspark and driver extra), and
# containerd, runc, the CNI plugins, iptables and debootstrap from Debian; all
# cached under .cache/k8s.
setup-k8s: setup-cluster
	bash scripts/setup_k8s.sh

# The lifecycle on it (tests/k8s): the cluster itself first, then drivers as Job pods.
e2e-k8s: setup-k8s
	$(PY) -m pytest tests/k8s -ra --durations=10

# Secured clusters (tests/kerberos): MIT Kerberos' KDC and tools from Debian (krb5-kdc,
# krb5-admin-server, krb5-user, libkrb5-dev: about 10 s) and gssapi from PyPI (built from
# its sdist, about 45 s); the tests start their own realm in a temporary folder.
setup-kerberos: setup-cluster
	VENV=$(VENV) bash scripts/setup_kerberos.sh

# A KDC, a GSSAPI Kafka listener and a ResourceManager behind SPNEGO (about 40 s of tests).
e2e-kerberos: setup-kerberos
	$(PY) -m pytest tests/kerberos -ra --durations=10

# The UI tier (tests/ui): Debian's Chromium (apt-get, once) driven by Playwright against a
# real `airflow api-server` with Airflow's own login, and a running job (45-70 s of tests).
# KAFKASPARK_UPDATE_SCREENSHOTS=1 also writes the view's screenshots to docs/screenshots/.
setup-ui: setup
	bash scripts/setup_ui.sh

test-ui: setup-ui
	$(PY) -m pytest tests/ui -ra --durations=10

lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports

# The documentation site (mkdocs.yml): docs/ and the reference under docs/reference/, made from
# the code at build time (mkdocstrings, scripts/docs_hooks.py), built into .local/site with
# warnings as errors: a broken link between pages or a docstring MkDocs cannot read fails it
# (about 3 s).
docs: setup
	$(VENV)/bin/mkdocs build --strict -d .local/site

# The stop -> savepoint race, 20 driver rounds instead of CI's 5.
soak: setup
	KAFKASPARK_STOP_ROUNDS=20 $(PY) -m pytest tests/integration/test_stop_lifecycle.py -ra

bench: setup
	$(PY) benchmarks/run.py broker_throughput

# Fault injection with counts (reliability/): the long profile, then the table in
# docs/reliability.md; chaos-short is the profile CI runs in tests/reliability/.
chaos: setup
	$(PY) -m reliability.run --profile long

chaos-short: setup
	$(PY) -m reliability.run --profile short

# The release artifacts: wheel and sdist of the provider and of the dev stack in dist/, checked
# with twine and for what they hold (scripts/dist.sh, about 10 s; CHANGELOG.md names the version).
dist: setup
	PYTHON=$(PY) bash scripts/dist.sh dist

clean:
	rm -rf .local .pytest_cache .mypy_cache .ruff_cache
