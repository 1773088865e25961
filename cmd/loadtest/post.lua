-- wrk script: POST one echo tool call.
wrk.method = "POST"
wrk.headers["content-type"] = "application/json"
wrk.headers["kindgi-pack-token"] = "bench"
wrk.body = '{"v":2,"kind":"invoke","tool":{"id":"echo.message"},"input":{"message":"hello"},"ctx":{"tenantId":"t","runId":"r"}}'
