// A watch stream of the API (`?watch=true`): fetch() with the bearer token, newline-delimited
// JSON read from the body, reconnect with jittered backoff, resume with Last-Event-ID.
//
// EventSource cannot send an Authorization header, hence fetch and a ReadableStream reader.
// The caller gets:
//   onSnapshot(objects)  the complete current state (the ADDED events of an open without a
//                        token, up to the BOOKMARK with initialEventsEnd): replace what is shown
//   onEvent(event)       one change after that, or after a resume: {type, object, id}
//   onStatus(state, why) "connecting" | "live" | "reconnecting" | "paused" | "off"
//   onError(apiError)    an answer that is neither a stream nor one of the cases below (e.g. 404)
// A resume token the service cannot resume from (410: too old, another replica, a restart)
// is dropped and the stream opened afresh, which delivers a new snapshot.  400
// `streams-need-the-model` and 501 mean this service has no streams: "off", for good.
// 401/403: "paused" until the page is loaded again (with a token).
//
// `resumeFrom`: a token the caller read with its list (`metadata.resumeFrom`): the first open
// continues from there (`?resumeFrom=`), so it brings only what changed since, never every row.
// `onStale()`: instead of starting over with a snapshot when a token cannot be resumed, the
// caller is told (it reads its page again, with a fresh token).

import { ApiError, authHeaders, problemFrom } from "./api.js";
import { BASE } from "./dom.js";

const BACKOFF_MS = 500; // first retry after 0.25–0.5 s, doubling …
const BACKOFF_MAX_MS = 15000; // … up to 7.5–15 s
const STEADY_MS = 10000; // a connection that stayed up this long resets the backoff
const SILENCE_MS = 45000; // the service sends a bookmark every 15 s: 45 s of silence is a dead link

class Ended extends Error {}

/**
 * Open the stream of `path` (an API path with its query, without watch=true).  The id of
 * every event, bookmarks included, is where a reconnection resumes from.
 * Returns {close()}; after close() no callback runs any more.
 */
export function openStream(path, { onSnapshot, onEvent, onStatus, onError, resumeFrom = null, onStale } = {}) {
  const plain = BASE + path + (path.includes("?") ? "&" : "?") + "watch=true";
  let url = resumeFrom ? plain + "&resumeFrom=" + encodeURIComponent(resumeFrom) : plain;
  let lastId = null; // (once set, its Last-Event-ID header wins over the URL's resumeFrom)
  let attempt = 0;
  let closed = false;
  let controller = null;
  let retryTimer = null;
  let state = null;

  const status = (s, why = "") => {
    if (closed || (s === state && !why)) return;
    state = s;
    if (onStatus) onStatus(s, why);
  };

  function delay() {
    const base = Math.min(BACKOFF_MAX_MS, BACKOFF_MS * 2 ** attempt);
    attempt++;
    return Math.round(base * (0.5 + Math.random() * 0.5)); // jitter: many tabs do not come back at once
  }

  function schedule(ms, why) {
    if (closed) return;
    clearTimeout(retryTimer);
    status("reconnecting", why + (ms >= 1000 ? ` (next try in ${Math.round(ms / 1000)} s)` : ""));
    retryTimer = setTimeout(connect, ms);
  }

  async function connect() {
    retryTimer = null;
    if (closed) return;
    controller = new AbortController();
    const mine = controller;
    const headers = { Accept: "application/json", ...authHeaders() };
    const resuming = lastId !== null || url !== plain;
    if (lastId !== null) headers["Last-Event-ID"] = lastId;
    if (state === null) status("connecting");
    let resp;
    try {
      resp = await fetch(url, { headers, signal: mine.signal, credentials: "omit", cache: "no-store" });
    } catch (e) {
      if (!closed && mine === controller) schedule(delay(), "the service cannot be reached");
      return;
    }
    if (closed || mine !== controller) return;
    if (!resp.ok) {
      let raw = "";
      try {
        raw = await resp.text();
      } catch { /* the body is lost: the status says enough */ }
      if (closed || mine !== controller) return;
      refused(resp, new ApiError(resp.status, problemFrom(resp, raw)), resuming);
      return;
    }
    await read(resp, mine, resuming);
  }

  function refused(resp, err, resuming) {
    const type = String(err.problem.type || "");
    if (err.status === 501 || (err.status === 400 && type.endsWith("streams-need-the-model"))) {
      status("off", err.status === 501 ? "this service has no cluster access"
        : "this service reads the API server directly (--cache false), without the live model that streams need");
      stop();
    } else if (resuming && (err.status === 410 || (err.status === 400 && type.endsWith("resume-token")))) {
      lastId = null; // the service cannot continue from there: start over, from a fresh state
      url = plain;
      if (onStale) {
        stop();
        onStale();
        return;
      }
      connect(); // (without a token there is nothing to refuse: no loop)
    } else if (err.status === 401 || err.status === 403) {
      status("paused", err.status === 401 ? "the API needs a (valid) token: use Refresh" : "the API refused: " + err.message);
      stop();
    } else {
      const after = Number(resp.headers.get("Retry-After"));
      if (onError && err.status !== 503) onError(err);
      schedule(after > 0 ? after * 1000 : delay(), err.message);
    }
  }

  async function read(resp, mine, resuming) {
    let reader = null;
    const decoder = new TextDecoder();
    const started = Date.now();
    let initial = !resuming; // an open without a token begins with the whole state
    let snapshot = [];
    let buf = "";
    let silence = null;
    const watchdog = () => {
      clearTimeout(silence);
      silence = setTimeout(() => mine.abort(), SILENCE_MS);
    };
    let why = "the connection was lost";
    try {
      reader = resp.body.getReader();
      watchdog();
      for (;;) {
        const { value, done } = await reader.read();
        if (closed || mine !== controller) return;
        if (done) break;
        watchdog();
        buf += decoder.decode(value, { stream: true });
        let nl;
        while ((nl = buf.indexOf("\n")) >= 0) {
          const line = buf.slice(0, nl).trim();
          buf = buf.slice(nl + 1);
          if (!line) continue;
          const ev = JSON.parse(line);
          if (ev.type === "ERROR") { // the service ends the stream (e.g. this client fell behind): resume
            why = (ev.object && (ev.object.detail || ev.object.title)) || "the service ended the stream";
            throw new Ended();
          }
          if (ev.type === "BOOKMARK") {
            if (ev.id) lastId = ev.id; // (keeps the token of a quiet stream fresh)
            if (ev.initialEventsEnd) {
              if (initial && onSnapshot) onSnapshot(snapshot);
              initial = false;
              snapshot = [];
              status("live");
            }
          } else {
            if (ev.id) lastId = ev.id;
            if (initial) snapshot.push(ev.object);
            else if (onEvent) onEvent(ev);
          }
          if (closed || mine !== controller) return;
        }
      }
    } catch (e) {
      if (closed || mine !== controller) return;
      if (e instanceof SyntaxError) why = "the stream was garbled";
      else if (!(e instanceof Ended) && mine.signal.aborted) why = "no word from the service for a while";
    } finally {
      clearTimeout(silence);
    }
    if (closed || mine !== controller) return;
    if (Date.now() - started > STEADY_MS) attempt = 0;
    mine.abort(); // release the connection if the body is still open (error event, garbled line)
    controller = null;
    schedule(delay(), why);
  }

  function stop() {
    clearTimeout(retryTimer);
    retryTimer = null;
    if (controller) controller.abort();
    controller = null;
  }

  const online = () => { // the browser is back online: no need to wait for the next try
    if (!closed && retryTimer !== null) {
      clearTimeout(retryTimer);
      connect();
    }
  };
  window.addEventListener("online", online);
  connect();

  return {
    /** Stop for good: abort the request, cancel any retry; no callback runs after this. */
    close() {
      closed = true;
      stop();
      window.removeEventListener("online", online);
    },
  };
}
