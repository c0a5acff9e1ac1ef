// The order of GET /workloads?sort= (app/cluster/listing.py SORTS), for the rows a stream brings:
// where a new row goes on the page, and whether it falls on this page at all.  It must read as
// listing.py does: unknown values last, then the row's identity (cluster, namespace, name,
// kind, apiVersion) breaks ties, strings compared by code point (not by locale).

export const SORTS = ["namespace", "name", "gpus", "-gpus", "age", "-age", "phase", "-phase"];

const text = (a, b) => (a < b ? -1 : a > b ? 1 : 0);
const unknownLast = (a, b) => (a === null) - (b === null);

function ident(r) {
  const w = r.workload || {};
  return [r.cluster || "", w.namespace || "", w.name || "", w.kind || "", w.apiVersion || ""];
}

function epoch(ts) {
  const t = ts ? Date.parse(ts) : NaN;
  return Number.isNaN(t) ? null : Math.floor(t / 1000);
}

function byIdent(a, b) {
  const x = ident(a);
  const y = ident(b);
  for (let i = 0; i < x.length; i++) {
    const c = text(x[i], y[i]);
    if (c) return c;
  }
  return 0;
}

/** <0, 0, >0 as `a` comes before, with, after `b` in the server's order `sort`. */
export function compareRows(sort, a, b) {
  const desc = sort.startsWith("-");
  const by = desc ? sort.slice(1) : sort;
  let c = 0;
  if (by === "name") c = text(a.workload?.name || "", b.workload?.name || "");
  else if (by === "gpus") {
    const x = a.gpus ?? null;
    const y = b.gpus ?? null;
    c = unknownLast(x, y) || (desc ? (y || 0) - (x || 0) : (x || 0) - (y || 0));
  } else if (by === "age") { // `age`: the youngest first (the newest creationTimestamp), `-age` the oldest
    const x = epoch(a.createdAt);
    const y = epoch(b.createdAt);
    c = unknownLast(x, y) || (desc ? (x || 0) - (y || 0) : (y || 0) - (x || 0));
  } else if (by === "phase") {
    const x = a.phase ?? null;
    const y = b.phase ?? null;
    c = unknownLast(x, y) || (desc ? text(y || "", x || "") : text(x || "", y || ""));
  }
  return c || byIdent(a, b);
}
