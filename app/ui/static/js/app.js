// Entry point: the token control of the top bar, and a tiny router over location.pathname.
// A view may return a function: it is called when the view is left (it closes its streams).

import { getToken, onTokenChange, setToken } from "./api.js";
import { BASE, clear, h, put, setTitle, ui } from "./dom.js";
import { renderList } from "./views/list.js";
import { renderWorkload } from "./views/workload.js";
import { renderInterpret } from "./views/interpret.js";
import { renderDefinition } from "./views/definition.js";
import { renderFleet } from "./views/fleet.js";

const routes = [
  [/^\/ui\/?$/, "workloads", () => renderList],
  [/^\/ui\/workloads\/([^/]+)\/([^/]+)\/?$/, "workloads", (m) => (view) => renderWorkload(view, dec(m[1]), dec(m[2]))],
  [/^\/ui\/clusters\/([^/]+)\/workloads\/([^/]+)\/([^/]+)\/?$/, "workloads",
    (m) => (view) => renderWorkload(view, dec(m[2]), dec(m[3]), dec(m[1]))],
  [/^\/ui\/fleet\/?$/, "fleet", () => renderFleet],
  [/^\/ui\/interpret\/?$/, "interpret", () => renderInterpret],
  [/^\/ui\/definitions\/([^/]+)\/?$/, "definitions", (m) => (view) => renderDefinition(view, dec(m[1]))],
];

function dec(part) {
  try {
    return decodeURIComponent(part);
  } catch {
    return part;
  }
}

function tokenControl() {
  const button = document.getElementById("token-button");
  const state = document.getElementById("token-state");
  const dialog = document.getElementById("token-dialog");
  const input = document.getElementById("token-input");
  const show = (t) => {
    button.classList.toggle("set", !!t);
    state.textContent = t ? "Token set" : "No token";
  };
  show(getToken());
  onTokenChange(show);
  button.addEventListener("click", () => {
    input.value = getToken();
    dialog.showModal();
    input.select();
  });
  document.getElementById("token-cancel").addEventListener("click", () => dialog.close());
  document.getElementById("token-clear").addEventListener("click", () => {
    setToken("");
    dialog.close();
    route();
  });
  document.getElementById("token-form").addEventListener("submit", () => {
    setToken(input.value);
    route(); // reload the page's data with the new token
  });
}

let leave = null; // what the page on screen must stop (its streams) when another replaces it

function route() {
  const view = document.getElementById("view");
  const path = location.pathname.slice(BASE.length);
  if (leave) leave();
  leave = null;
  for (const [re, nav, make] of routes) {
    const m = path.match(re);
    if (!m) continue;
    for (const a of document.querySelectorAll("[data-nav]")) a.classList.toggle("active", a.dataset.nav === nav);
    clear(view);
    const done = make(m)(view);
    if (typeof done === "function") leave = done;
    return;
  }
  setTitle("Not found");
  put(view, h("div", { class: "notice error" }, h("h2", {}, "No such page"),
    h("p", {}, "Go to ", h("a", { href: ui("/") }, "the workloads"), " or ", h("a", { href: ui("/interpret") },
      "interpret a manifest"), ".")));
}

tokenControl();
route();
// Leaving the page closes its streams; coming back to it from the back/forward cache reopens them.
window.addEventListener("pagehide", () => {
  if (leave) leave();
  leave = null;
});
window.addEventListener("pageshow", (e) => {
  if (e.persisted) route();
});
