"""Names vulture (`make lint`) would call dead that are used where it cannot see: by a
framework, by a protocol's caller, by serialisation, or by the tests alone. Never imported
or run: vulture reads each line as a use of the name. Reviewed by hand; each line says who
uses the name. Route handlers, Celery tasks, pydantic validators and `model_config` are
left out by pattern (`[tool.vulture]` in pyproject.toml), not listed here."""

from typing import Any

_: Any = None

# Frameworks and protocols: called or read by the library, never by our code.
_.__getattr__  # api/main.py: PEP 562 module __getattr__, builds `api.main:app` on first use
_._put  # messaging/filesystem.py: kombu's Channel calls it to publish
_.default_connection_params  # messaging/filesystem.py: kombu's Connection reads it for defaults
_._active_proc  # engine/kernel.py: SimPy's Process sets it on the Kernel while it runs
_.impl  # store/types.py: SQLAlchemy's TypeDecorator reads the underlying column type
_.cache_ok  # store/types.py: SQLAlchemy's TypeDecorator: safe to cache statements using it
_.process_bind_param  # store/types.py: SQLAlchemy calls it on every value written
_.process_result_value  # store/types.py: SQLAlchemy calls it on every value read
_.include  # worker/celery_app.py: Celery imports `app.conf.include` at worker start
_._memory_ceiling  # worker/celery_app.py: Celery calls it in each new pool process (a signal)
_.worker_max_memory_per_child  # worker/celery_app.py: Celery reads it after each task
_.compress_type  # api/exports/zipstream.py: zipfile reads ZipInfo's fields when it opens one
_.external_attr  # api/exports/zipstream.py: zipfile writes it as the files' permissions
_.closed  # api/exports/zipstream.py: Arrow reads Member.closed before writing to it

# Fields serialised to JSON (API responses, the Result, scenario documents) and never read
# by name in Python: pydantic reads them from the class.
_.scenarios_differ  # api/compare/schemas.py: RunComparison
_.differing_paths  # api/compare/schemas.py: RunComparison
_.differing_path_count  # api/compare/schemas.py: RunComparison
_.capture_packets  # api/limits.py: Estimate
_.instance  # api/responses.py and client/models.py: Problem (RFC 9457)
_.href  # api/runs/schemas.py and client/models.py: CaptureOut
_.units  # api/series/schemas.py: Frame
_.cost_classes  # engine/advice/reports.py: Fix (the advice report)
_.min_spacing  # engine/result.py and client/models.py: Thinning
_.bucket  # engine/result.py: Thinning
_.samples_per_point  # engine/result.py: Thinning
_.to_simulate  # api/sweeps/schemas.py: SweepCost
_.cpu_seconds  # api/sweeps/schemas.py: SweepCost
_.speed_basis  # api/sweeps/schemas.py: SweepCost
_.speed_runs  # api/sweeps/schemas.py: SweepCost
_.engine_setup_seconds  # api/sweeps/schemas.py: SweepEstimate (the fitted setup)
_.clipped  # api/compare/schemas.py: Interval (an end moved to the metric's bound)
_.eta_seconds  # api/sweeps/schemas.py and client/models.py: SweepProgress
_.eta_method  # api/sweeps/schemas.py and client/models.py: SweepProgress
_.simulations  # api/sweeps/schemas.py and client/models.py: SweepOut
_.base_run  # api/advice/schemas.py and client/models.py: AdviceLinks
_.throughput_pps  # engine/result.py: TcpFlowSummary
_.delay_p50  # engine/result.py: TcpFlowSummary, UdpFlowSummary
_.delay_p95  # engine/result.py: TcpFlowSummary, UdpFlowSummary
_.delay_p99  # engine/result.py: TcpFlowSummary, UdpFlowSummary
_.jitter  # engine/result.py: TcpFlowSummary, UdpFlowSummary
_.application_bps  # engine/result.py: FlowDiagnosis
_.dlci  # engine/scenario/network.py: Pvc (checked unique by the document, shown in captures)
_.bottleneck_rate_bps  # engine/analysis/paths.py: PathFacts, in the dry run's facts (as_dict)
_.ack_clock_bps  # engine/analysis/paths.py: PathFacts, in the dry run's facts (as_dict)
_.rate_bps  # engine/result.py: ShaperSummary
_.delay_max  # engine/result.py: ShaperSummary
_.shaper_reverse  # engine/result.py: PvcSummary

# Read by Python's import system: engine/native.py's finder and the specs it returns.
_.find_spec
_.has_location
_.receive_window  # engine/result.py: FlowTime, its states read by name (accounting.FIELDS)
_.send_buffer  # engine/result.py: FlowTime, the same
_.congestion_avoidance  # engine/result.py: FlowTime, the same
_.application  # engine/result.py: FlowTime, the same
_.charge_wait  # engine/accounting.py: the queueing hook of stages other than ports (a shaper)

# Read by the tests alone: the client's public API, and what the tests check against.
_.series_keys  # client/api.py: Run.series_keys(), public (tests/integration/test_cli.py)
_.ENDPOINTS  # client/api.py: checked against openapi.json (tests/unit/test_client_models.py)
_.OPENAPI  # client/models.py: each model's schema name, for the same test
_.MODELS  # client/models.py: the models that test checks
_.undocumented  # engine/docs.py: tests/unit/test_docs.py fails when a field has no description
_.css_entered_round  # engine/tcp/cc/slowstart.py: RFC 9406 rounds, asserted by test_engine_hystart
_.exit_round  # engine/tcp/cc/slowstart.py: the same
_.unregister  # engine/variants.py: a test forgets its own variant (test_variant_registry)
_.bound  # engine/tcp/recovery/prr.py: the expression that set sndcnt, asserted by test_engine_prr
