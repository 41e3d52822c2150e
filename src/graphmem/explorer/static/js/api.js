// The explorer's only door to the server: same-origin JSON under /api/, with the bearer token.
//
// The token arrives once (in the address's fragment from `graphmem view`, or typed into the
// form), is kept in sessionStorage for this tab, and never goes back into the address bar.

const TOKEN_KEY = "graphmem.token";

/** An answer that was not 2xx: `status` and the server's own message. */
export class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

/** Take `#token=...` out of the address (kept in sessionStorage) and return the rest of the fragment. */
export function takeTokenFromAddress() {
  const params = new URLSearchParams(location.hash.slice(1));
  const token = params.get("token");
  if (token === null) return params;
  params.delete("token");
  sessionStorage.setItem(TOKEN_KEY, token);
  const rest = params.toString();
  // replaceState, not location.hash: no history entry keeps the token either.
  history.replaceState(null, "", location.pathname + location.search + (rest ? "#" + rest : ""));
  return params;
}

export function setToken(token) {
  sessionStorage.setItem(TOKEN_KEY, token);
}

function headers(extra) {
  const token = sessionStorage.getItem(TOKEN_KEY);
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

/** GET /api/PATH with the query parameters in `params` (undefined and null values are left out). */
export async function get(path, params = {}) {
  const query = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) {
    if (value !== undefined && value !== null && value !== "") query.set(key, String(value));
  }
  const suffix = query.toString() ? "?" + query.toString() : "";
  return answer(await fetch("/api/" + path + suffix, { headers: headers() }));
}

/** POST /api/PATH with a JSON body. */
export async function post(path, body) {
  const response = await fetch("/api/" + path, {
    method: "POST",
    headers: headers({ "Content-Type": "application/json" }),
    body: JSON.stringify(body),
  });
  return answer(response);
}
