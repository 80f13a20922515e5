# Contact IK developer commands. `make demo` runs the main job, `make test` runs every check.
PY := .venv/bin/python
# The other supported Blenders, tested with their `bpy` wheels (the main one is pinned in
# requirements-dev.txt). Each gets its own venv, .venv-<major.minor>.
OTHER_BLENDERS := 4.5.15 4.2.23
# e.g. make demo DEMO_ARGS=--quick, or DEMO_ARGS=--update-docs to refresh docs/before_after.png
DEMO_ARGS ?=

.PHONY: venv build demo test test-main test-others lint typecheck quality bench bench-quick clean

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

# Every check: ruff, mypy, then the whole suite on Blender 5.0, 4.5 LTS and 4.2 LTS.
test: venv lint typecheck test-main test-others

test-main: venv
	@echo "== tests, $$(grep "^bpy==" requirements-dev.txt)"
	@$(PY) -m pytest -q

test-others:
	@set -e; for v in $(OTHER_BLENDERS); do \
	  bash tools/bootstrap.sh $$v; \
	  echo "== tests, Blender $$v"; \
	  .venv-$$(echo $$v | cut -d. -f1-2)/bin/python -m pytest -q -p no:cacheprovider; \
	done

quality: venv
	@$(PY) tools/quality.py

bench: venv
	@$(PY) benchmarks/run_all.py

bench-quick: venv
	@$(PY) benchmarks/run_all.py --quick --output out/benchmarks-quick.md

clean:
	rm -rf dist out .venv .venv-*
