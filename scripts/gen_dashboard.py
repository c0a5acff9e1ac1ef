"""Write the Grafana dashboard of the workload metrics (`GET /metrics/workloads`) to
`helm/workload-map/dashboards/workload-map.json`, built with the Grafana Foundation SDK's typed
builders (no hand-written JSON); `--check` exits 1 when the file is not what this script makes
(run `python scripts/gen_dashboard.py` after changing it).  The chart ships the file in an opt-in
ConfigMap for the Grafana sidecar (`grafanaDashboard.enabled`).

The series, one set per top-level workload, labelled namespace, group ("" for core), kind, name:
wlmap_workload_info{definition}, wlmap_workload_phase{phase} (1 for the current phase, 0 for the
others), wlmap_workload_pods_desired, wlmap_workload_pods_ready,
wlmap_workload_resource_requests{resource} and wlmap_workload_gang_min_available.

Every replica of the service exports the same series (the ServiceMonitor scrapes each pod), so
every query first collapses replicas with `max by (namespace, group, kind, name)` (plus the
label it keeps, phase or resource) before it adds workloads up; a plain `sum` would count each
workload once per replica.  The current phase of a workload, for joins, is
`topk by (namespace, group, kind, name) (1, wlmap_workload_phase == 1)`: exactly one series per
workload even when two replicas disagree for a moment during a transition (a `max by (...,
phase)` would then give the workload two phases and make the join fail).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from grafana_foundation_sdk.builders import bargauge, dashboard, prometheus, stat, table, timeseries
from grafana_foundation_sdk.builders import common as common_builder
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.models import common
from grafana_foundation_sdk.models import prometheus as prom
from grafana_foundation_sdk.models.dashboard import (
    DashboardCursorSync,
    DataSourceRef,
    DataTransformerConfig,
    DynamicConfigValue,
    Threshold,
    ThresholdsMode,
    VariableOption,
    VariableRefresh,
    VariableSort,
)

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "helm" / "workload-map" / "dashboards" / "workload-map.json"

UID = "workload-map"
DATASOURCE = DataSourceRef(type_val="prometheus", uid="${datasource}")

# The dashboard's filters, applied to every series.
SEL = 'namespace=~"$namespace", kind=~"$kind"'
# The labels that name one workload.
KEY = "namespace, group, kind, name"
GPU = "nvidia.com/gpu"
TOP_N = 20

# Phases of wlmap_workload_phase and the colour each one gets wherever phases are plotted.
PHASE_COLORS: dict[str, str] = {
    "Initializing": "yellow",
    "Running": "green",
    "Completed": "blue",
    "Failed": "red",
    "Degraded": "orange",
    "Suspended": "purple",
    "Suspending": "light-purple",
    "Resuming": "light-green",
    "Undefined": "#8e8e8e",
}


# -- PromQL -----------------------------------------------------------------------------------

def per_workload(metric: str, *matchers: str) -> str:
    """One series per workload (replicas collapsed), filtered by the dashboard's variables."""
    return f"max by ({KEY}) ({metric}{{{', '.join([*matchers, SEL])}}})"


GPUS = per_workload("wlmap_workload_resource_requests", f'resource="{GPU}"')
PODS_READY = per_workload("wlmap_workload_pods_ready")
PODS_DESIRED = per_workload("wlmap_workload_pods_desired")
WORKLOADS = per_workload("wlmap_workload_info")
# Each workload's current phase: one series per workload, its phase in the `phase` label.
CURRENT_PHASE = f"topk by ({KEY}) (1, wlmap_workload_phase{{{SEL}}} == 1)"
# 1 or 0 for every (workload, phase): summed by phase, how many workloads are in each phase,
# zeros included.
PHASE_FLAGS = f"max by ({KEY}, phase) (wlmap_workload_phase{{{SEL}}})"


def with_phase(expr: str) -> str:
    """`expr` (one series per workload) with the workload's current phase as a label."""
    return f"({expr}) * on({KEY}) group_left(phase) {CURRENT_PHASE}"


TOP_GPUS = f"topk({TOP_N}, {GPUS} > 0)"


def of_top_gpus(expr: str) -> str:
    """`expr` for the workloads of TOP_GPUS only (the rows of the table)."""
    return f"({expr}) and on({KEY}) {TOP_GPUS}"


# -- panel helpers ----------------------------------------------------------------------------

def query(expr: str, legend: str = "", ref: str = "A") -> prometheus.Dataquery:
    return prometheus.Dataquery().datasource(DATASOURCE).expr(expr).legend_format(legend or "__auto").ref_id(ref)


def instant_table(expr: str, ref: str) -> prometheus.Dataquery:
    return (prometheus.Dataquery().datasource(DATASOURCE).expr(expr).instant().format(prom.PromQueryFormat.TABLE)
            .legend_format("__auto").ref_id(ref))


def legend(mode: common.LegendDisplayMode = common.LegendDisplayMode.LIST,
           placement: common.LegendPlacement = common.LegendPlacement.BOTTOM) -> common_builder.VizLegendOptions:
    return common_builder.VizLegendOptions().display_mode(mode).placement(placement).show_legend(True)


def series(title: str, description: str, *, stacked: bool, unit: str = "short") -> timeseries.Panel:
    p = (timeseries.Panel().title(title).description(description).datasource(DATASOURCE).unit(unit).min(0)
         .line_width(1).fill_opacity(25 if stacked else 0).show_points(common.VisibilityMode.NEVER)
         .legend(legend(common.LegendDisplayMode.TABLE, common.LegendPlacement.RIGHT).calcs(["lastNotNull", "max"]))
         .tooltip(common_builder.VizTooltipOptions().mode(common.TooltipDisplayMode.MULTI)
                  .sort(common.SortOrder.DESCENDING)))
    if stacked:
        p = p.stacking(common_builder.StackingConfig().mode(common.StackingMode.NORMAL))
    return p


def big_number(title: str, description: str) -> stat.Panel:
    return (stat.Panel().title(title).description(description).datasource(DATASOURCE).height(4).span(6)
            .reduce_options(common_builder.ReduceDataOptions().calcs(["lastNotNull"]).values(False))
            .graph_mode(common.BigValueGraphMode.AREA).color_mode(common.BigValueColorMode.VALUE)
            .text_mode(common.BigValueTextMode.AUTO).no_value("0"))


def thresholds(*steps: tuple[float | None, str]) -> dashboard.ThresholdsConfig:
    return dashboard.ThresholdsConfig().mode(ThresholdsMode.ABSOLUTE).steps(
        [Threshold(value=v, color=c) for v, c in steps])


# Counts that are neither good nor bad: one colour (Grafana's default turns them red from 80).
NEUTRAL = dashboard.ThresholdsConfig().mode(ThresholdsMode.ABSOLUTE).steps([Threshold(value=None, color="blue")])


def color_phases(p: Any) -> Any:
    """Fixed colours per phase (the series are named by their phase)."""
    for phase, color in PHASE_COLORS.items():
        p = p.override_by_name(phase, [DynamicConfigValue(id_val="color",
                                                          value={"mode": "fixed", "fixedColor": color})])
    return p


# -- the dashboard ----------------------------------------------------------------------------

def variables() -> list[Any]:
    def label_variable(name: str, label: str, query_text: str) -> dashboard.QueryVariable:
        return (dashboard.QueryVariable(name).label(label).query(query_text).datasource(DATASOURCE)
                .refresh(VariableRefresh.ON_TIME_RANGE_CHANGED).sort(VariableSort.ALPHABETICAL_ASC)
                .multi(True).include_all(True).all_value(".*")
                .current(VariableOption(selected=True, text="All", value="$__all")))

    return [
        dashboard.DatasourceVariable("datasource").label("Data source").type("prometheus"),
        label_variable("namespace", "Namespace", "label_values(wlmap_workload_info, namespace)"),
        label_variable("kind", "Kind", 'label_values(wlmap_workload_info{namespace=~"$namespace"}, kind)'),
    ]


def overview() -> list[Any]:
    return [
        big_number("GPUs requested", f"{GPU} requested by the selected workloads (desired totals).")
        .thresholds(NEUTRAL)
        .with_target(query(f"sum({GPUS})", "GPUs")),
        big_number("Workloads", "Top-level workloads in the selected namespaces and kinds.")
        .thresholds(NEUTRAL)
        .with_target(query(f"count({WORKLOADS})", "workloads")),
        big_number("Pods ready / desired", "Ready pods and desired pods of the selected workloads.")
        .text_mode(common.BigValueTextMode.VALUE_AND_NAME).thresholds(NEUTRAL)
        .with_target(query(f"sum({PODS_READY})", "ready", "A"))
        .with_target(query(f"sum({PODS_DESIRED})", "desired", "B")),
        big_number("Failed or degraded", "Workloads whose current phase is Failed or Degraded.")
        .thresholds(thresholds((None, "green"), (1, "red")))
        .with_target(query(f'sum(max by ({KEY}, phase) (wlmap_workload_phase{{phase=~"Failed|Degraded", {SEL}}}))',
                           "failed or degraded")),
    ]


def gpus() -> list[Any]:
    top = (table.Panel().title(f"Workloads with the most GPUs (top {TOP_N})")
           .description("Current GPU requests per workload, with its phase and pods.")
           .datasource(DATASOURCE).height(10).span(12)
           .with_target(instant_table(with_phase(TOP_GPUS), "A"))
           .with_target(instant_table(with_phase(of_top_gpus(PODS_READY)), "B"))
           .with_target(instant_table(with_phase(of_top_gpus(PODS_DESIRED)), "C"))
           .with_transformation(DataTransformerConfig(id_val="merge", options={}))
           .with_transformation(DataTransformerConfig(id_val="organize", options={
               "excludeByName": {"Time": True},
               "indexByName": {"namespace": 0, "kind": 1, "name": 2, "group": 3, "phase": 4,
                               "Value #A": 5, "Value #B": 6, "Value #C": 7},
               "renameByName": {"Value #A": "GPUs", "Value #B": "Pods ready", "Value #C": "Pods desired"},
           }))
           .sort_by([common_builder.TableSortByFieldState().display_name("GPUs").desc(True)]))
    return [
        series("GPUs requested by namespace", f"{GPU} requested, summed by namespace.", stacked=True)
        .height(10).span(12)
        .with_target(query(f"sum by (namespace) ({GPUS})", "{{namespace}}")),
        series("GPUs requested by kind", f"{GPU} requested, summed by kind (API group in brackets).", stacked=True)
        .height(10).span(12)
        .with_target(query(f'label_replace(sum by (group, kind) ({GPUS}), "group", "core", "group", "")',
                           "{{kind}} ({{group}})")),
        color_phases(series("GPUs requested by phase", f"{GPU} requested, summed by the workloads' current phase.",
                            stacked=True).height(10).span(12))
        .with_target(query(f"sum by (phase) ({with_phase(GPUS)})", "{{phase}}")),
        top,
    ]


def phases() -> list[Any]:
    now = (bargauge.Panel().title("Workloads by phase").description("Workloads in each phase now.")
           .datasource(DATASOURCE).height(9).span(8).min(0).decimals(0)
           .orientation(common.VizOrientation.HORIZONTAL).display_mode(common.BarGaugeDisplayMode.BASIC)
           .value_mode(common.BarGaugeValueMode.COLOR).show_unfilled(True)
           .reduce_options(common_builder.ReduceDataOptions().calcs(["lastNotNull"]).values(False))
           .with_target(query(f"sum by (phase) ({PHASE_FLAGS})", "{{phase}}").instant()))
    return [
        color_phases(now),
        color_phases(series("Workloads by phase over time", "Workloads in each phase.", stacked=True)
                     .height(9).span(16).decimals(0))
        .with_target(query(f"sum by (phase) ({PHASE_FLAGS})", "{{phase}}")),
    ]


def pods() -> list[Any]:
    desired_dashed = [DynamicConfigValue(id_val="custom.lineStyle", value={"fill": "dash", "dash": [10, 10]})]
    return [
        series("Pods ready vs desired", "Ready and desired pods of the selected workloads.", stacked=False)
        .height(9).span(12).decimals(0)
        .override_by_name("desired", desired_dashed)
        .with_target(query(f"sum({PODS_READY})", "ready", "A"))
        .with_target(query(f"sum({PODS_DESIRED})", "desired", "B")),
        series("Pods ready vs desired by namespace", "Ready (solid) and desired (dashed) pods per namespace.",
               stacked=False)
        .height(9).span(12).decimals(0)
        .override_by_regexp(".* desired$", desired_dashed)
        .with_target(query(f"sum by (namespace) ({PODS_READY})", "{{namespace}} ready", "A"))
        .with_target(query(f"sum by (namespace) ({PODS_DESIRED})", "{{namespace}} desired", "B")),
    ]


def build() -> dict[str, Any]:
    d = (dashboard.Dashboard("workload-map: AI workloads")
         .uid(UID)
         .description("GPUs, phases and pods of the Kubernetes AI workloads workload-map interprets "
                      "(GET /metrics/workloads). Generated by scripts/gen_dashboard.py.")
         .tags(["workload-map", "kubernetes", "gpu"])
         .editable()
         .tooltip(DashboardCursorSync.CROSSHAIR)
         .time("now-6h", "now")
         .refresh("1m")
         .timezone("browser")
         .annotation(dashboard.AnnotationQuery().name("Annotations & Alerts").built_in(1).enable(True).hide(True)
                     .datasource(DataSourceRef(type_val="grafana", uid="-- Grafana --"))
                     .icon_color("rgba(0, 211, 255, 1)").type("dashboard"))
         .variables(variables()))
    next_id = 1
    for title, panels in (("Overview", overview()), ("GPUs", gpus()), ("Phases", phases()), ("Pods", pods())):
        d = d.with_row(dashboard.Row(title).id(next_id))
        next_id += 1
        for p in panels:
            d = d.with_panel(p.id(next_id))
            next_id += 1
    return json.loads(json.dumps(d.build(), cls=JSONEncoder))


def render() -> str:
    """The file's text: keys sorted, two-space indents, so diffs of the generated file are readable."""
    return json.dumps(build(), sort_keys=True, indent=2, ensure_ascii=False) + "\n"


def main() -> int:
    text = render()
    if "--check" in sys.argv:
        current = OUT.read_text() if OUT.exists() else ""
        if current != text:
            print(f"{OUT.relative_to(ROOT)} is stale: run python scripts/gen_dashboard.py", file=sys.stderr)
            return 1
        return 0
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
