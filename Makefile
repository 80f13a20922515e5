# Contact IK developer commands. `make demo` runs the main job, `make test` runs every check.
PY := .venv/bin/python
# e.g. make demo DEMO_ARGS=--quick, or DEMO_ARGS=--update-docs to refresh docs/before_after.png
DEMO_ARGS ?=

.PHONY: venv build demo test lint typecheck quality bench clean

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

test: venv lint typecheck
	@$(PY) -m pytest -q

quality: venv
	@$(PY) tools/quality.py

bench: venv
	@$(PY) benchmarks/bench_frame_set.py
	@$(PY) benchmarks/bench_bake.py

clean:
	rm -rf dist out .venv
