# Contact IK developer commands. `make demo` runs the main job, `make test` runs every check.
PY := .venv/bin/python

.PHONY: venv build demo test lint typecheck quality bench bench-quick clean

venv:
	@bash tools/bootstrap.sh

build: venv
	@$(PY) tools/build_extension.py

demo: venv
	@$(PY) tools/demo.py

lint: venv
	@$(PY) -m ruff check .

typecheck: venv
	@bash tools/typecheck.sh

test: venv lint typecheck
	@$(PY) -m pytest -q

quality: venv
	@$(PY) tools/quality.py

bench: venv
	@$(PY) benchmarks/run_all.py

bench-quick: venv
	@$(PY) benchmarks/run_all.py --quick --output out/benchmarks-quick.md

clean:
	rm -rf dist out .venv
