-- wrk script: a stateless MCP tools/call (get_company_info), protocol 2025-06-18, JSON response.
-- No initialize: the endpoint is stateless, every POST stands alone.
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Accept"] = "application/json, text/event-stream"
wrk.headers["MCP-Protocol-Version"] = "2025-06-18"
wrk.body = '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_company_info","arguments":{}}}'

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
