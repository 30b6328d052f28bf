"""proxyfleet-bench: `run` every benchmark (or some), print one table, write the doc."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from proxyfleet.bench.suite import MODULES, main_run

app = typer.Typer(add_completion=False, no_args_is_help=True)


@app.callback()
def _root() -> None:
    """Benchmarks of Proxyfleet's hot paths (issue 3): figures, targets, baselines."""


@app.command()
def run(
    quick: Annotated[
        bool, typer.Option("--quick", help="Short runs, small fleets: checks the benchmarks work.")
    ] = False,
    only: Annotated[
        list[str] | None,
        typer.Option("--only", help=f"Run only this benchmark (repeatable): {', '.join(MODULES)}."),
    ] = None,
    docs: Annotated[
        Path, typer.Option(help="Where performance.md and the latency plot are written.")
    ] = Path("docs"),
    write_doc: Annotated[
        bool | None,
        typer.Option(
            "--write-doc/--no-write-doc",
            help="Write the doc (default: only for a full run, without --quick or --only).",
        ),
    ] = None,
    keep: Annotated[
        bool, typer.Option("--keep", help="Keep the scratch dir (logs, raw wrk output).")
    ] = False,
) -> None:
    """Start NATS and Redis, run the benchmarks, print the table, write docs/performance.md."""
    chosen = only or []
    if write_doc is None:
        write_doc = not quick and not chosen
    try:
        outcome = main_run(chosen, quick=quick, docs_dir=docs if write_doc else None, keep=keep)
    except ValueError as exc:
        typer.echo(f"proxyfleet-bench: {exc}", err=True)
        raise typer.Exit(2) from None
    if not outcome.figures:
        raise typer.Exit(1)


def main() -> None:
    app()
