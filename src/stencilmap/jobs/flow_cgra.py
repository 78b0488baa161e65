"""``compile`` on a triggered-instruction CGRA (``cgra-tia``): the worker mapping (CGRA paper §III–§VI:
w workers from the §VI roofline, strips when the buffering overflows, one layer per time step on chip), its
assembly and DFG, and the CGRA simulator running the mapping with values (on a grid cut along its outermost
axis when large) — which checks the mapping the assembly describes; there is no separate code to run.
``--hybrid``: the simulation is §IV's CPU + CGRA divide-and-conquer (``jobs.hybrid_cgra``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from stencilmap.design.common import with_iterate
from stencilmap.design.ir import Design
from stencilmap.design.registry import BuildConfig
from stencilmap.device.catalog import Device
from stencilmap.io import Array
from stencilmap.jobs.compile_flows import (
    Choice,
    Csim,
    Report,
    SimOutcome,
    shrink_outer,
    time_steps,
    validate_outputs,
    verdict,
)
from stencilmap.program.ir import Program

if TYPE_CHECKING:
    from stencilmap.design.cgra.mapping import CgraMapping
    from stencilmap.jobs.compile import CompileConfig


class CgraFlow:
    """See the module docstring."""

    #: ``compile --hybrid``: simulate §IV's CPU + CGRA divide-and-conquer (``jobs.hybrid_cgra``)
    hybrid: bool = False

    def choose(
        self, program: Program, device: Device, config: CompileConfig, source: str, report: Report
    ) -> Choice:
        from stencilmap.jobs.estimate import EstimateConfig, estimate
        from stencilmap.point import DesignPoint

        self.hybrid = config.hybrid

        one_pass = replace(program, iterate=1)
        iterations = time_steps(program, config.iterations)
        q = min(iterations, max(1, program.iterate))  # layers on chip: the program's own iterate
        point = DesignPoint(arch="cgra", iterate=q, device=config.device)
        est = estimate(EstimateConfig(program=one_pass, point=point, iterations=iterations))
        params = dict(est.parameters)
        extra = dict(est.extra)
        why = (
            f"{params['workers']} workers (the §VI roofline's choice: {extra.get('roofline_workers')}), "
            f"{params['strips']} strip(s), {q} layer(s) on chip; {extra.get('cgra_bound')}-bound"
        )
        parameters = (("workers", int(str(params["workers"]))), ("iterate", q))
        choice = Choice(
            device,
            one_pass,
            source,
            iterations,
            "cgra",
            parameters,
            est.predicted_seconds,
            why,
            "cgra-asm",
            est,
            input_files=config.input_files,
        )
        cmd = choice.command(
            "estimate", "--device", config.device, *choice.options(), "--iterations", str(iterations)
        )
        return replace(choice, commands=(("estimate", cmd),), device_ref=config.device)

    def build(self, choice: Choice) -> Design:
        from stencilmap.arch import arch

        return arch("cgra").build(with_iterate(choice.program, choice.q), self._config(choice))

    def generate(self, choice: Choice, design: Design | None, folder: Path) -> tuple[str, ...]:
        from stencilmap.codegen.cgra import assembly, cgra_dot

        mapping = self._mapping(choice, choice.program)
        folder.mkdir(parents=True)
        (folder / "cgra.asm").write_text(assembly(mapping), encoding="utf-8")
        (folder / "cgra_dfg.dot").write_text(cgra_dot(mapping), encoding="utf-8")
        return ("code/cgra.asm", "code/cgra_dfg.dot")

    def verify(self, choice: Choice, stage: Path, cap: int) -> Csim:
        sim = self._simulate(choice, cap, hybrid=False)
        return sim.as_csim("the mapping the assembly describes, run with values by the CGRA simulator")

    def simulate(
        self, choice: Choice, cap: int, report: Report, notify: Callable[[str], None] | None
    ) -> SimOutcome:
        return self._simulate(choice, cap, self.hybrid)

    def _simulate(self, choice: Choice, cap: int, hybrid: bool) -> SimOutcome:
        from stencilmap.arch.simulate import simulate_cgra
        from stencilmap.codegen.cgra import assembly
        from stencilmap.codegen.cgra_asm import parse_asm
        from stencilmap.jobs.simulate import as_field_dtype
        from stencilmap.model.roofline import roofline_of

        shape = shrink_outer(choice.program, max(cap, 1), min_rows=32)
        program = with_iterate(choice.program.with_shape(shape), choice.q)
        # the text the flow writes, parsed back: the assembly is what runs
        mapping = parse_asm(assembly(self._mapping(choice, choice.program.with_shape(shape))), "cgra.asm")
        values = choice.values(program)
        if hybrid:
            return self._hybrid(choice, program, values, shape)
        roof = roofline_of(program, shape, choice.device, mapping.layers).attainable_gops
        paired = simulate_cgra(mapping, dict(values), choice.device, roof, None)
        run = paired.run
        got = {k: as_field_dtype(v, program.field_dtype(k)) for k, v in run.outputs.items()}
        valid, exact, error = validate_outputs(got, program, values)
        predicted = paired.prediction.cycles
        command = choice.command("simulate", "--device", choice.device_ref, *choice.options(), shape=shape)
        extra = (("cgra", paired.to_json()),)
        return SimOutcome(
            valid and run.status == "done",
            status=run.status,
            cycles=run.cycles,
            predicted_cycles=predicted,
            shape=shape,
            scaled=shape != choice.shape,
            seconds=run.sim_seconds,
            message=verdict(valid, exact, error),
            command=command,
            extra=extra,
        )

    def _hybrid(
        self, choice: Choice, program: Program, values: Mapping[str, Array], shape: tuple[int, ...]
    ) -> SimOutcome:
        """§IV's CPU + CGRA divide-and-conquer on the simulated grid: the CPU's boundary and remainder, the
        CGRA's subtasks (each simulated), stitched and validated against the reference."""
        from stencilmap.jobs.hybrid_cgra import run_hybrid
        from stencilmap.jobs.simulate import as_field_dtype

        run = run_hybrid(program, values, self._config(choice), choice.device)
        got = {k: as_field_dtype(v, program.field_dtype(k)) for k, v in run.outputs.items()}
        valid, exact, error = validate_outputs(got, program, values)
        command = choice.command("simulate", "--device", choice.device_ref, *choice.options(), shape=shape)
        return SimOutcome(
            valid and run.status == "done",
            status=run.status,
            cycles=run.cgra_cycles,
            predicted_cycles=run.predicted_cycles,
            shape=shape,
            scaled=shape != choice.shape,
            seconds=run.sim_seconds,
            message=verdict(valid, exact, error) + f" (hybrid: {run.cpu_points:,} points on the CPU)",
            command=command,
            extra=(("hybrid", run.to_json()),),
        )

    def _config(self, choice: Choice) -> BuildConfig:
        return BuildConfig(device=choice.device_ref, workers=int(dict(choice.parameters)["workers"]))

    def _mapping(self, choice: Choice, program: Program) -> CgraMapping:
        from stencilmap.design.cgra.mapping import map_cgra
        from stencilmap.model.cgra import roofline_workers_of

        return map_cgra(with_iterate(program, choice.q), self._config(choice), roofline_workers_of)
