# Contact IK developer commands. `make demo` runs the main job, `make test` runs every check.
PY := .venv/bin/python
# The other supported Blenders, tested with their `bpy` wheels (the main one is pinned in
# requirements-dev.txt). Each gets its own venv, .venv-<major.minor>, with the Python its wheel needs
# (3.11 up to 5.0, 3.13 from 5.1: tools/bootstrap.sh finds it).
OTHER_BLENDERS := 4.5.15 4.2.23 5.2.4 5.1.2 5.3.0
# e.g. make demo DEMO_ARGS=--quick, or DEMO_ARGS=--update-docs to refresh docs/before_after.png
DEMO_ARGS ?=

.PHONY: venv build demo test test-main test-others lint typecheck quality characters bench bench-quick bench-cluster clean

venv:
	@bash tools/bootstrap.sh

build: venv
	@$(PY) tools/build_extension.py

demo: venv
	@$(PY) tools/demo.py $(DEMO_ARGS)

lint: venv
	@$(PY) -m ruff check .

typecheck: venv
	@bash tools/typecheck.sh

# Every check: ruff, mypy, then the whole suite on Blender 5.0, 4.5 LTS, 4.2 LTS, 5.2 LTS, 5.1 and 5.3, two
# suites at a time (tools/test_blenders.sh; TEST_JOBS=1 for one at a time).
test: venv lint typecheck
	@bash tools/test_blenders.sh main $(OTHER_BLENDERS)

test-main: venv
	@echo "== tests, $$(grep "^bpy==" requirements-dev.txt)"
	@$(PY) -m pytest -q tests

test-others:
	@bash tools/test_blenders.sh $(OTHER_BLENDERS)

quality: venv
	@$(PY) tools/quality.py

# Characters as users bring them (FBX/glTF imports, root motion, loops, a run) -> docs/characters.md
characters: venv
	@$(PY) tools/characters.py

bench: venv
	@$(PY) benchmarks/run_all.py

bench-quick: venv
	@$(PY) benchmarks/run_all.py --quick --output out/benchmarks-quick.md

# The batch on a Dask cluster (1 and 2 local workers) beside the local pool -> docs/cluster_benchmark.md
bench-cluster: venv
	@$(PY) benchmarks/bench_cluster.py

clean:
	rm -rf dist out .venv .venv-*
