// The explorer's only door to the server: same-origin JSON under /api/, with the bearer token,
// each request in the project the page looks at (`?project=`; none: the server's or the token's).
//
// The token arrives once (in the address's fragment from `graphmem view`, or typed into the
// form), is kept in sessionStorage for this tab, and never goes back into the address bar.
//
// A token in a link is adopted only by a tab that holds none yet. A tab signed in already keeps
// its own and the page offers the link's instead: a link can be made by anyone, and adopting its
// token silently would record the visitor's edits under the name of whoever made it.

const TOKEN_KEY = "graphmem.token";

/** A token a link carried while the tab held another: kept in memory only, until the user chooses. */
let offered = null;

/** The project every request names: a key, "shared", "*" for every project, or null for the default. */
let project = null;

/** Whether the tab's token came from a link this page load (a new tab signed in by the link). */
let fromLink = false;

/** An answer that was not 2xx: `status` and the server's own message. */
export class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

/**
 * Take `#token=...` out of the address and return the rest of the fragment. The token is kept
 * (in sessionStorage) when the tab holds none yet, else offered (see `offeredToken`).
 */
export function takeTokenFromAddress() {
  const params = new URLSearchParams(location.hash.slice(1));
  const token = params.get("token");
  if (token === null) return params;
  params.delete("token");
  const held = sessionStorage.getItem(TOKEN_KEY);
  if (!held) {
    sessionStorage.setItem(TOKEN_KEY, token);
    fromLink = true;
  } else if (held !== token) offered = token;
  const rest = params.toString();
  // replaceState, not location.hash: no history entry keeps the token either.
  history.replaceState(null, "", location.pathname + location.search + (rest ? "#" + rest : ""));
  return params;
}

export function setToken(token) {
  sessionStorage.setItem(TOKEN_KEY, token);
  offered = null;
}

/** Whether the tab's token was taken from the link that opened it (the page says whose it is). */
export function signedInByLink() {
  return fromLink;
}

/** Whether the tab holds a token. */
export function hasToken() {
  return Boolean(sessionStorage.getItem(TOKEN_KEY));
}

/** The token a link carried while the tab held another, or null. */
export function offeredToken() {
  return offered;
}

/** Forget the offered token: the user keeps the one the tab holds. */
export function declineOfferedToken() {
  offered = null;
}

/** Send every request from now on in `value` (a project's key, "shared" or "*"; null: the default). */
export function useProject(value) {
  project = value || null;
}

function headers(extra, token = sessionStorage.getItem(TOKEN_KEY)) {
  const all = { Accept: "application/json", ...extra };
  if (token) all.Authorization = "Bearer " + token;
  return all;
}

async function answer(response) {
  let body = null;
  try {
    body = await response.json();
  } catch {
    body = null;
  }
  if (!response.ok) {
    const message = body && typeof body.error === "string" ? body.error : `The server answered ${response.status}.`;
    throw new ApiError(response.status, message);
  }
  return body;
}

/**
 * GET /api/PATH with the query parameters in `params` (undefined and null values are left out),
 * sent with the tab's token, or with `token` when one is given.
 */
export async function get(path, params = {}, token = undefined) {
  const query = new URLSearchParams();
  if (project) query.set("project", project);
  for (const [key, value] of Object.entries(params)) {
    if (value !== undefined && value !== null && value !== "") query.set(key, String(value));
  }
  const suffix = query.toString() ? "?" + query.toString() : "";
  return answer(await fetch("/api/" + path + suffix, { headers: headers({}, token) }));
}

/** POST /api/PATH with a JSON body. */
export async function post(path, body) {
  const suffix = project ? "?" + new URLSearchParams({ project }).toString() : "";
  const response = await fetch("/api/" + path + suffix, {
    method: "POST",
    headers: headers({ "Content-Type": "application/json" }),
    body: JSON.stringify(body),
  });
  return answer(response);
}
