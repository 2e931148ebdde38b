"""The fleet service tests: a package, so that its conftest is `deploy.conftest`.

A plain `conftest` module name would replace the one other folders' tests import
(`from conftest import Live`) when pytest collects this folder after theirs."""
