// The small "live" indicator of the pages that follow a stream: its state, why, and the time
// of the last update shown.

import { h } from "./dom.js";

const TEXT = {
  connecting: "connecting…",
  live: "live",
  reconnecting: "reconnecting…",
  paused: "updates paused",
  off: "updates paused",
};
const TITLE = {
  connecting: "Opening the stream of changes",
  live: "Changes in the cluster show here as they happen",
  reconnecting: "The stream of changes was interrupted",
  paused: "No live updates",
  off: "No live updates: use Refresh",
};

/** {el, status(state, why), updated(date?)}: `el` goes in the page head. */
export function liveIndicator() {
  const text = h("span", { class: "live-text", id: "live-state" }, TEXT.connecting);
  const hint = h("span", { class: "live-hint hidden", id: "live-hint" }, "use Refresh");
  const time = h("span", { class: "live-time", id: "updated" });
  const el = h("span", { class: "live", id: "live", role: "status", dataset: { state: "connecting" },
    title: TITLE.connecting }, h("i", { class: "live-dot", "aria-hidden": "true" }), text, hint, time);
  return {
    el,
    status(state, why = "") {
      el.dataset.state = state;
      text.textContent = TEXT[state] || state;
      el.title = TITLE[state] + (why ? ` (${why})` : "");
      hint.classList.toggle("hidden", state !== "off" && state !== "paused");
    },
    updated(at = new Date()) {
      time.textContent = `updated ${at.toLocaleTimeString()}`;
      time.title = at.toLocaleString();
    },
  };
}
