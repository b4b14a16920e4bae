# Kindling: two commands do all the set-up on a fresh Debian 12 machine (root).
#   make site   [INVENTORY=inventories/gpu]   converge site.yml (default: inventories/local)
#   make test                                  lint, unit tests and every Molecule scenario
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

VENV            ?= .venv
INVENTORY       ?= inventories/local
KINDLING_CACHE  ?= $(HOME)/.cache/kindling
SCENARIO        ?=
PYTHON_BOOT     ?= python3
COLLECTIONS_STAMP := collections/.kindling-collections.json
# Debian packages the test bed needs (podman runs Molecule's hosts; mmdebstrap builds
# their image; equivs, apt-utils, gnupg and xz-utils build the fixture repository;
# headless Chromium drives the JupyterLab browser test; gcc and libc6-dev build the stand-in
# libcuda.so.1 that the cuInit probe's tests load). Installed without recommends:
# Chromium's would pull udev, avahi and more onto the machine.
APT_PACKAGES    := podman runc uidmap mmdebstrap equivs apt-utils gnupg xz-utils chromium fonts-liberation gcc libc6-dev

export PATH                    := $(CURDIR)/$(VENV)/bin:$(PATH)
export KINDLING_CACHE
export CONTAINERS_CONF         := $(CURDIR)/molecule/_shared/podman/containers.conf
export CONTAINERS_STORAGE_CONF := $(KINDLING_CACHE)/podman/storage.conf
export ANSIBLE_FORCE_COLOR     ?= false
export PYTHONDONTWRITEBYTECODE := 1

.PHONY: help site test controller venv apt-deps podman-config lint catalogue catalogue-check catalogue-freshness health-codes health-codes-check references references-check variables variables-check yamllint ansible-lint ruff workflows unit registry molecule reliability fixtures clean

help: ## List the targets
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-14s %s\n", $$1, $$2}'

# ---------------------------------------------------------------- the two commands
site: controller ## Converge playbooks/site.yml (INVENTORY=inventories/local by default)
	ansible-playbook playbooks/site.yml -i $(INVENTORY) $(ARGS)

# Three lanes side by side (tools/run-lanes.sh): lint, unit, registry, then the reliability
# suite; the scenarios whose services listen on host ports; every other scenario.
test: venv apt-deps podman-config fixtures ## Lint, unit, registry, every Molecule scenario, reliability suite, in lanes (CI runs this)
	tools/testbed.sh tools/run-lanes.sh
	@echo "make test: all checks passed"

# ---------------------------------------------------------------- bootstrap
# `make site` installs the controller alone: requirements.txt in $(VENV) and requirements.yml's
# collections in collections/ (ansible.cfg's collections_path), copied out of the `ansible`
# bundle's wheel (tools/install_collections.py). `make venv` adds the test tool chain
# (requirements-dev.txt, which includes requirements.txt) to the same $(VENV).
controller: $(VENV)/.controller-installed $(COLLECTIONS_STAMP) ## Install the controller alone: requirements.txt, requirements.yml's collections

venv: $(VENV)/.installed ## Create the virtualenv with the pinned test tool chain (requirements-dev.txt)

$(VENV)/.controller-installed: requirements.txt
	@test -x $(VENV)/bin/python || $(PYTHON_BOOT) -m venv $(VENV)
	$(VENV)/bin/python -m pip install -q --disable-pip-version-check -r requirements.txt
	@touch $@

$(COLLECTIONS_STAMP): requirements.yml requirements-dev.txt tools/install_collections.py $(VENV)/.controller-installed
	$(VENV)/bin/python tools/install_collections.py --dest collections --cache $(KINDLING_CACHE)/wheels

$(VENV)/.installed: requirements-dev.txt requirements.txt
	@test -x $(VENV)/bin/python || $(PYTHON_BOOT) -m venv $(VENV)
	$(VENV)/bin/python -m pip install -q --disable-pip-version-check -r requirements-dev.txt
	@touch $@ $(VENV)/.controller-installed

apt-deps: ## Install the Debian packages the test bed needs, when missing
	@missing=""; for p in $(APT_PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'install ok installed' || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "apt-get install:$$missing"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	fi

podman-config: $(CONTAINERS_STORAGE_CONF)

$(CONTAINERS_STORAGE_CONF): molecule/_shared/podman/storage.conf.in
	@mkdir -p $(dir $@)
	sed 's|@CACHE@|$(KINDLING_CACHE)|g' $< > $@

# ---------------------------------------------------------------- checks
lint: catalogue-check health-codes-check references-check variables-check yamllint ansible-lint ruff workflows ## catalogue, health codes, reference table and variable tables in step, yamllint, ansible-lint (production profile), ruff, workflow schema

catalogue: venv ## Regenerate module_utils/vendor_catalogue.py and README's stack x OS table from the catalogue
	$(VENV)/bin/python tools/catalogue.py
	$(VENV)/bin/python tools/stack_matrix.py

catalogue-check: ## Fail when the catalogue's generated copy or README's stack x OS table is out of date
	$(VENV)/bin/python tools/catalogue.py --check
	$(VENV)/bin/python tools/stack_matrix.py --check

catalogue-freshness: ## Print what PyPI serves that the catalogue does not know (never fails for a new release; needs https://pypi.org)
	$(VENV)/bin/python tools/catalogue_freshness.py --doc

health-codes: venv ## Regenerate docs/HEALTH_CODES.md from the health-code registry and the catalogue
	$(VENV)/bin/python tools/health_codes.py

health-codes-check: ## Fail when docs/HEALTH_CODES.md is out of date
	$(VENV)/bin/python tools/health_codes.py --check

references: venv ## Regenerate docs/BENCHMARKS.md's reference table from the catalogue
	$(VENV)/bin/python tools/reference_table.py

references-check: ## Fail when docs/BENCHMARKS.md's reference table is out of date
	$(VENV)/bin/python tools/reference_table.py --check

variables: venv ## Regenerate each role's defaults/main.yml, docs/VARIABLES.md and the READMEs' variable tables from meta/argument_specs.yml
	$(VENV)/bin/python tools/variables_doc.py

variables-check: ## Fail when a role's defaults/main.yml, docs/VARIABLES.md or a README's variable table is out of date
	$(VENV)/bin/python tools/variables_doc.py --check

yamllint:
	yamllint --strict .

ansible-lint:
	ansible-lint --offline

ruff:
	ruff check .
	ruff format --check .

workflows: ## Validate .github/workflows against GitHub's schema (they run only where GPUs are)
	check-jsonschema --builtin-schema vendor.github-workflows .github/workflows/*.yml

unit: ## pytest unit tests (tests/unit)
	pytest -q tests/unit

registry: ## Python pins resolved against PyPI's real index (needs the network)
	pytest -q -p no:cacheprovider tests/registry

fixtures: ## Build the fixture package sources (stand-ins for vendor servers)
	$(VENV)/bin/python tests/fixture_sources/build_fixtures.py --out $(KINDLING_CACHE)/fixtures
	$(VENV)/bin/python tests/fixture_sources/pci_trees.py --out $(KINDLING_CACHE)/fixtures

molecule: podman-config fixtures ## Every Molecule scenario (SCENARIO=name for one)
	tools/testbed.sh tools/run-molecule.sh $(SCENARIO)

reliability: podman-config fixtures ## Bad inputs, faults, check mode and secrets against a test host
	tools/testbed.sh pytest -q -p no:cacheprovider $(or $(TESTS),tests/reliability) $(PYTEST_ARGS)

clean: ## Remove the virtualenv, the copied collections and local caches (the test image cache stays)
	rm -rf $(VENV) collections .cache .pytest_cache .ruff_cache
