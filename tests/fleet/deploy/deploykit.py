"""Helpers for the fleet service tests: the keys of a stand-in deployment.

Import as `from deploy.deploykit import standin`."""

from __future__ import annotations

from support import standin_keys as standin

__all__ = ["standin"]
