// Loaded with `node --import` into the conformance runner, which has no option to send a header: adds
// `Authorization: Bearer $TOOLHALL_AUTH_TOKEN` to every request for the origin $TOOLHALL_AUTH_ORIGIN (and to
// no other origin), through the global dispatcher that both `fetch` and undici's `request` use.
const origin = process.env.TOOLHALL_AUTH_ORIGIN;
const token = process.env.TOOLHALL_AUTH_TOKEN;

function withAuth(headers) {
  const value = `Bearer ${token}`;
  if (headers == null) return { authorization: value };
  if (Array.isArray(headers)) {
    if (headers.length > 0 && Array.isArray(headers[0])) return [...headers, ["authorization", value]];
    return [...headers, "authorization", value];
  }
  if (typeof headers[Symbol.iterator] === "function") return [...headers, ["authorization", value]];
  return { ...headers, authorization: value };
}

if (origin && token) {
  // The first fetch makes Node install its global dispatcher (an undici Agent); wrap that one instance.
  await fetch("data:,").catch(() => undefined);
  const agent = globalThis[Symbol.for("undici.globalDispatcher.1")];
  if (!agent) throw new Error("bearer_preload: no global undici dispatcher to wrap");
  const dispatch = agent.dispatch.bind(agent);
  agent.dispatch = (opts, handler) => {
    const target = opts.origin instanceof URL ? opts.origin.origin : String(opts.origin ?? "");
    return dispatch(target === origin ? { ...opts, headers: withAuth(opts.headers) } : opts, handler);
  };
}
