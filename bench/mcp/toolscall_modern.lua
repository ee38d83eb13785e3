-- wrk script: the same tools/call as a 2026-07-28 single-exchange request (no handshake;
-- per-request _meta envelope plus Mcp-Method / Mcp-Name headers).
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Accept"] = "application/json, text/event-stream"
wrk.headers["MCP-Protocol-Version"] = "2026-07-28"
wrk.headers["Mcp-Method"] = "tools/call"
wrk.headers["Mcp-Name"] = "get_company_info"
wrk.body = '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_company_info","arguments":{},' ..
  '"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}'

-- Each wrk thread has its own Lua state: count bad answers there and add them up in done().
local threads = {}
function setup(thread) table.insert(threads, thread) end
function init(args) bad = 0 end

function response(status, headers, body)
  -- a 200 whose result is an error (no structuredContent) is bad too
  if status ~= 200 or not string.find(body, '"structuredContent"', 1, true) then bad = bad + 1 end
end

function done(summary, latency, requests)
  local total_bad = 0
  for _, thread in ipairs(threads) do total_bad = total_bad + thread:get("bad") end
  io.write(string.format(
    "RESULT requests=%d duration_s=%.2f rps=%.1f p50_ms=%.2f p90_ms=%.2f p99_ms=%.2f max_ms=%.2f socket_errors=%d non2xx=%d bad=%d\n",
    summary.requests, summary.duration / 1e6, summary.requests / (summary.duration / 1e6),
    latency:percentile(50) / 1000, latency:percentile(90) / 1000, latency:percentile(99) / 1000,
    latency.max / 1000,
    summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout,
    summary.errors.status, total_bad))
end
