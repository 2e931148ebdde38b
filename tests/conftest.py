"""Fixtures shared by every test package."""

from __future__ import annotations
