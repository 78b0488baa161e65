"""``stencilmap devices``: the device catalog (``stencilmap.device.catalog``) as a table or JSON."""

from __future__ import annotations

import json
from typing import Any

import click
from rich.console import Console
from rich.table import Table

from stencilmap.cli.common import echo_csv, format_options, make_console, output_format, user_errors


def devices_json() -> list[dict[str, Any]]:
    from stencilmap.device.catalog import device_names, load_device

    return [load_device(name).to_json() for name in device_names()]


def print_devices(console: Console) -> None:
    from stencilmap.device.catalog import device_names, load_device

    table = Table(title="device catalog", title_justify="left")
    for col in ("device", "kind", "clock", "DRAM", "peak BW", "E_coef", "practical", "peak fp32", "models"):
        table.add_column(col, justify="left" if col in ("device", "kind", "DRAM", "models") else "right")
    for name in device_names():
        d = load_device(name)
        table.add_row(
            d.name,
            d.kind,
            f"{d.clock_mhz:g} MHz",
            f"{d.dram_banks}×{d.bus_width_bits}b" + (" HBM" if d.memory_kind == "hbm" else ""),
            f"{d.bandwidth_gbs:g} GB/s",
            f"{d.mem_efficiency:.3g}",
            f"{d.practical_bandwidth_gbs:.4g} GB/s",
            f"{d.peak('float32'):g} GOp/s",
            ",".join(d.archs),
        )
    console.print(table)
    for name in device_names():
        console.print(f"[bold]{name}[/bold]: {load_device(name).description}")


#: ``devices --format csv``: one row per device.
CSV_COLUMNS = (
    "device",
    "kind",
    "clock_mhz",
    "dram_banks",
    "bus_width_bits",
    "bandwidth_gbs",
    "mem_efficiency",
    "practical_bandwidth_gbs",
    "peak_gops_float32",
    "peak_gops_float64",
    "models",
    "description",
)


def devices_csv() -> None:
    from stencilmap.device.catalog import device_names, load_device

    rows = []
    for name in device_names():
        d = load_device(name)
        rows.append(
            (
                d.name,
                d.kind,
                d.clock_mhz,
                d.dram_banks,
                d.bus_width_bits,
                d.bandwidth_gbs,
                d.mem_efficiency,
                d.practical_bandwidth_gbs,
                d.peak("float32"),
                d.peak("float64"),
                ";".join(d.archs),
                d.description,
            )
        )
    echo_csv(CSV_COLUMNS, rows)


@click.command("devices")
@format_options
@user_errors
def devices_cmd(fmt: str, as_json: bool) -> None:
    """List the device catalog: clocks, memory, bandwidth, peaks, and the models each device supports.

    \b
    Examples:
      stencilmap devices
      stencilmap devices --format csv
      stencilmap devices --json
    """
    fmt = output_format(fmt, as_json)
    if fmt == "json":
        click.echo(json.dumps(devices_json(), indent=2))
    elif fmt == "csv":
        devices_csv()
    else:
        print_devices(make_console())
