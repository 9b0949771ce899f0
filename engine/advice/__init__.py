"""What would fix it (issue 23, the engine's half): remedies as data, their check by
simulation, the advisor that meets a target at the least cost, and curves.

One job per module:

- `model`: `Remedy`, `Change`, `Effect` (what `Diagnosis.remedies` holds).
- `levers`: the catalogue of settings by dotted path, the tier ladder of real link products,
  the default `CostTable`; `options`: a request's `LeverSpec`s resolved against a scenario
  (`Lever`), and `default_levers()`.
- `whatif`: `PathModel.bound(changes)`, the analytic bounds of a flow after changes.
- `build`, `rules`, `remedies`, `words`: a diagnosed flow's remedies and their sentences
  (`remedies.remedies(ctx)`, `remedies.why(ctx)`, `words.advice(why, found)`), called by engine/diagnosis.py.
- `target`: `Target` ("backup.completion_time<=200s"); `request`: `AdviceRequest`.
- `tracks`: how one lever (or a pair) is searched, pure and replayable; `search`: the
  `Advisor` workflow; `check`: the `RemedyCheck` workflow; `reports`: their typed answers
  (`AdviceReport`, `CheckReport`) and sentences; `curves`: metric against lever value with
  the bound beside it (JSON rows, CSV).
- `local`: `drive(scenario, workflow, jobs=N)` runs a workflow on this machine; `cli`:
  `python -m engine advise` and `python -m engine check`.

Both workflows keep engine/workflow.py's contract: `Advisor(scenario, request, state)` and
`RemedyCheck(scenario, request, state)` restore from `state()`; candidates become runs with
`engine.study.apply_changes(scenario, candidate.changes)`.
"""
