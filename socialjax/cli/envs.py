"""``socialjax envs``: the registered environments, one a line."""

from __future__ import annotations

import argparse

from socialjax.core.registry import describe_envs


def add_parser(subparsers) -> argparse.ArgumentParser:
    return subparsers.add_parser("envs", help="list the registered environments")


def main(args: argparse.Namespace) -> int:
    for name, desc in describe_envs().items():
        print(f"{name:16s} {desc}")
    return 0
