// Calls to the JSON API: the bearer token (sessionStorage), problem+json errors.

import { BASE, h, ui } from "./dom.js";

const KEY = "wlmap.token";
const listeners = new Set();

export function getToken() {
  try {
    return sessionStorage.getItem(KEY) || "";
  } catch {
    return "";
  }
}

export function setToken(token) {
  const t = (token || "").trim().replace(/^bearer\s+/i, "");
  try {
    if (t) sessionStorage.setItem(KEY, t);
    else sessionStorage.removeItem(KEY);
  } catch { /* storage disabled: the token lives as long as the page */ }
  for (const fn of listeners) fn(t);
}

export function onTokenChange(fn) {
  listeners.add(fn);
}

/** An answer that is not 2xx: `problem` is the RFC 9457 body (or one made up for the status). */
export class ApiError extends Error {
  constructor(status, problem) {
    super(problem.detail || problem.title || `HTTP ${status}`);
    this.status = status;
    this.problem = problem;
  }
}

/** The Authorization header of this tab's token (none without one). */
export function authHeaders() {
  const token = getToken();
  return token ? { Authorization: `Bearer ${token}` } : {};
}

/** The problem of a failed answer: its problem+json body, or one made up from the status. */
export function problemFrom(resp, raw) {
  let problem;
  try {
    problem = JSON.parse(raw);
  } catch {
    problem = null;
  }
  if (!problem || typeof problem !== "object") {
    problem = { title: resp.statusText || "Error", status: resp.status, detail: String(raw || "").slice(0, 500) };
  }
  return problem;
}

/**
 * fetch() against the API with the token; resolves to the parsed JSON (or text when `text`),
 * rejects with ApiError.  A network failure is an ApiError of status 0.
 */
export async function api(path, { method = "GET", body, contentType, accept = "application/json", text = false } = {}) {
  const headers = { Accept: accept, ...authHeaders() };
  if (body !== undefined) headers["Content-Type"] = contentType || "application/json";
  let resp;
  try {
    resp = await fetch(BASE + path, { method, headers, body, credentials: "omit", cache: "no-store" });
  } catch (e) {
    throw new ApiError(0, { title: "Service unreachable", status: 0,
      detail: `the request to ${path} failed: ${e.message || e}` });
  }
  const raw = await resp.text();
  if (!resp.ok) throw new ApiError(resp.status, problemFrom(resp, raw));
  if (text) return raw;
  return raw ? JSON.parse(raw) : null;
}

// -- rendering of errors ----------------------------------------------------------------

/** A problem+json as a notice: title, detail, and every finding (path, message, expression). */
export function problemNotice(err, heading) {
  const p = err instanceof ApiError ? err.problem : { title: "Error", detail: String(err && err.message || err) };
  const status = err instanceof ApiError && err.status ? ` (${err.status})` : "";
  const box = h("div", { class: "notice error problem", role: "alert" },
    h("h2", { class: "problem-title" }, (heading ? heading + ": " : "") + (p.title || "Error") + status),
    p.detail ? h("p", { class: "problem-detail" }, p.detail) : null);
  const errors = Array.isArray(p.errors) ? p.errors : [];
  if (errors.length) {
    const hasExpr = errors.some((e) => e && e.expression);
    box.append(h("table", { class: "problem-errors" },
      h("thead", {}, h("tr", {}, h("th", {}, "Path"), h("th", {}, "Message"), hasExpr ? h("th", {}, "Expression") : null)),
      h("tbody", {}, errors.map((e) => h("tr", { class: "finding" },
        h("td", {}, h("code", {}, e.path || "—")),
        h("td", {}, e.message || ""),
        hasExpr ? h("td", {}, e.expression ? h("code", {}, e.expression) : "") : null)))));
  }
  if (Array.isArray(p.candidates) && p.candidates.length) {
    box.append(h("p", {}, "Several workloads have this name; pick one:"),
      h("ul", {}, p.candidates.map((c) => h("li", {}, h("a", {
        href: ui(`/workloads/${encodeURIComponent(c.namespace)}/${encodeURIComponent(c.name)}?` +
          new URLSearchParams({ kind: c.kind, apiVersion: c.apiVersion })),
      }, `${c.kind} ${c.namespace}/${c.name}`), h("span", { class: "muted" }, ` (${c.apiVersion})`)))));
  }
  return box;
}

/** 401: ask for a token right where the data would be; `retry` runs once one is given. */
export function tokenPrompt(err, retry) {
  const had = !!getToken();
  const input = h("input", { type: "password", id: "inline-token", placeholder: "Kubernetes bearer token",
    autocomplete: "off", spellcheck: "false", "aria-label": "Bearer token" });
  const form = h("form", { class: "token-form", id: "inline-token-form" }, input,
    h("button", { type: "submit" }, "Use token"));
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    if (!input.value.trim()) return;
    setToken(input.value);
    retry();
  });
  const detail = err instanceof ApiError ? err.problem.detail : "";
  const box = h("div", { class: "notice warn token-prompt", role: "alert" },
    h("h2", {}, had ? "The token was not accepted" : "This service needs a token"),
    h("p", {}, had
      ? "The API refused the token of this tab. Paste another bearer token to continue."
      : "The API checks every call with Kubernetes (TokenReview and SubjectAccessReview). " +
        "Paste a bearer token for a user who may read these workloads, e.g. the output of ",
    had ? null : h("code", {}, "kubectl create token <service-account>"), had ? null : "."),
    detail ? h("p", { class: "muted" }, detail) : null,
    form);
  setTimeout(() => input.focus(), 0);
  return box;
}

/** The common answer to a failed load: token prompt on 401, else the problem. */
export function failure(err, retry, heading) {
  if (err instanceof ApiError && err.status === 401) return tokenPrompt(err, retry);
  return problemNotice(err, heading);
}
