// Suspend / Resume on the workload page: shown only when the service acts on workloads
// (--actions true: data-actions on the page) and the workload's definition has a
// suspendDefinition (read once per definition from GET /definitions/{name}).  A refusal (403,
// 409, 422...) is shown as the API's problem; a success draws the answer, and the page's
// stream keeps following the workload.

import { api, problemNotice } from "./api.js";
import { h, put } from "./dom.js";

/** The service writes to workloads (--actions true). */
export const ACTIONS = document.documentElement.dataset.actions === "true";
const SUSPENDED = new Set(["Suspended", "Suspending"]);
const suspendable = new Map(); // definition name -> Promise<boolean>

function canSuspend(definition) {
  const name = definition?.name;
  if (!name) return Promise.resolve(false);
  if (!suspendable.has(name)) {
    suspendable.set(name, api(`/definitions/${encodeURIComponent(name)}`)
      .then((d) => !!d?.spec?.structureDefinition?.rootComponent?.suspendDefinition)
      .catch(() => {
        suspendable.delete(name); // asked again with the next answer (a token given meanwhile)
        return false;
      }));
  }
  return suspendable.get(name);
}

/**
 * The buttons' place in the page head (`el`) and `update(result)`, called with each answer;
 * `path(which)` is the API path of the action, `done(result)` draws a successful answer.
 */
export function actionButtons(path, done) {
  const el = h("span", { class: "action-buttons", id: "actions" });
  const message = h("div", { id: "action-problem" });
  let busy = false;
  let last = null;

  async function act(which) {
    busy = true;
    draw();
    put(message);
    try {
      const result = await api(path(which), { method: "POST" });
      const { action, ...rest } = result; // eslint-disable-line no-unused-vars
      done(rest);
    } catch (err) {
      put(message, problemNotice(err, which === "suspend" ? "Could not suspend" : "Could not resume"));
    } finally {
      busy = false;
      draw();
    }
  }

  function draw() {
    el.dataset.state = !ACTIONS ? "off" : last ? "shown" : "none"; // settled: what the page offers
    if (!last) return put(el);
    const which = SUSPENDED.has(last.status?.phase) ? "resume" : "suspend";
    const button = h("button", { type: "button", class: "secondary", id: which, disabled: busy,
      title: which === "suspend" ? "Apply the definition's suspendActions" : "Apply the definition's resumeActions" },
    which === "suspend" ? "Suspend" : "Resume");
    button.addEventListener("click", () => act(which));
    put(el, button);
  }

  async function update(result) {
    if (!ACTIONS) return draw();
    const ok = await canSuspend(result.definition);
    last = ok ? result : null;
    draw();
  }

  return { el, message, update };
}
