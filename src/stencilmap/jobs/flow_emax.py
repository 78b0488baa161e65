"""``compile`` on EMAX: the 3-D stencil library's mapping (EMAX §4: the most Z-packed p that fits the
rows), its mnemonics, and the EMAX simulator, which interprets those mnemonics with real LMMs and FIFOs —
so the code's verification and the simulation are one run (on a grid cut in Z when large)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from stencilmap.design.ir import Design
from stencilmap.design.registry import BuildConfig
from stencilmap.device.catalog import Device
from stencilmap.jobs.compile_flows import Choice, Csim, Report, SimOutcome, shrink_outer, time_steps, verdict
from stencilmap.program.ir import Program

if TYPE_CHECKING:
    from stencilmap.design.emax import EmaxMapping
    from stencilmap.jobs.compile import CompileConfig


class EmaxFlow:
    """See the module docstring."""

    def choose(
        self, program: Program, device: Device, config: CompileConfig, source: str, report: Report
    ) -> Choice:
        from stencilmap.jobs.estimate import EstimateConfig, estimate
        from stencilmap.point import DesignPoint

        one_pass = replace(program, iterate=1)
        iterations = time_steps(program, config.iterations)
        point = DesignPoint(arch="emax", device=config.device)
        est = estimate(EstimateConfig(program=one_pass, point=point, iterations=iterations))
        params = dict(est.parameters)
        why = (
            f"a degree-{params['degree']} star: p = {params['p']} Z planes packed into {params['rows']} of "
            f"the {device.resource('pe_rows')} PE rows (EMAX §4.4, §4.6), {params['x_chunks']} X chunk(s); "
            f"time bound by the {dict(est.extra).get('timeline_bottleneck')} path of the five-state "
            f"timeline (§5.1)"
        )
        choice = Choice(
            device,
            one_pass,
            source,
            iterations,
            "emax",
            (("unroll", params["p"]),),
            est.predicted_seconds,
            why,
            "emax-asm",
            est,
            input_files=config.input_files,
        )
        est_cmd = choice.command(
            "estimate", "--device", config.device, *choice.options(), "--iterations", str(iterations)
        )
        return replace(choice, commands=(("estimate", est_cmd),), device_ref=config.device)

    def build(self, choice: Choice) -> Design:
        from stencilmap.design.registry import build

        return build("emax", choice.program, self._config(choice))

    def generate(self, choice: Choice, design: Design | None, folder: Path) -> tuple[str, ...]:
        from stencilmap.codegen.emax import mnemonics

        folder.mkdir(parents=True)
        (folder / "emax.asm").write_text(mnemonics(self._mapping(choice, choice.program)), encoding="utf-8")
        return ("code/emax.asm",)

    def verify(self, choice: Choice, stage: Path, cap: int) -> Csim:
        sim = self.simulate(choice, cap, lambda *_: None, None)
        return sim.as_csim("the mnemonics interpreted by the EMAX simulator (LMMs, FIFOs, ALU ops)")

    def simulate(
        self, choice: Choice, cap: int, report: Report, notify: Callable[[str], None] | None
    ) -> SimOutcome:
        from stencilmap.arch.simulate import simulate_emax
        from stencilmap.jobs.compile_flows import validate_outputs

        p = int(dict(choice.parameters)["unroll"])
        shape = shrink_outer(choice.program, max(cap, 1), min_rows=2 * p + 8)
        program = choice.program.with_shape(shape)
        mapping = self._mapping(choice, program)
        values = choice.values(program)
        paired = simulate_emax(mapping, values[mapping.field], choice.device)
        run = paired.run
        valid, exact, error = validate_outputs({mapping.output: run.output.reshape(shape)}, program, values)
        predicted = round(paired.model.seconds * run.clock_mhz * 1e6)
        command = choice.command("simulate", "--device", choice.device_ref, "--arch", "emax", shape=shape)
        extra = (("emax", paired.to_json()),)
        return SimOutcome(
            valid,
            status="done",
            cycles=run.cycles,
            predicted_cycles=predicted,
            shape=shape,
            scaled=shape != choice.shape,
            seconds=run.sim_seconds,
            message=verdict(valid, exact, error),
            command=command,
            extra=extra,
        )

    def _config(self, choice: Choice) -> BuildConfig:
        return BuildConfig(unroll=int(dict(choice.parameters)["unroll"]), device=choice.device_ref)

    def _mapping(self, choice: Choice, program: Program) -> EmaxMapping:
        from stencilmap.design.emax import map_emax

        return map_emax(program, self._config(choice))
