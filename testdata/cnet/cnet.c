/* cnet: a test pack that reaches the network through packd with the C
 * SDK's kindgi_http. net.fetch sends the request its input describes
 * ({url, method, body}), with the call's secret apiToken as a bearer
 * token, and answers {status, body, seen} (seen: the X-Seen header of the
 * response) or, when packd refused or failed it, {reason, message}. */
#define KINDGI_IMPLEMENTATION
#include "../../sdk/c/kindgi.h"

static int fetch(kindgi_json input, kindgi_json ctx, kindgi_out *out) {
    char *url = kindgi_string(kindgi_get(input, "url"), NULL);
    if (!url) return kindgi_throw(out, "TypeError", "url is not a string");
    char *method = kindgi_string(kindgi_get(input, "method"), NULL);
    size_t body_len = 0;
    char *body = kindgi_string(kindgi_get(input, "body"), &body_len);
    char *token = kindgi_string(kindgi_get(kindgi_get(ctx, "secrets"), "apiToken"), NULL);
    kindgi_out headers = {0};
    headers.first = 1;
    kindgi_begin_object(&headers);
    if (token) {
        char *bearer = malloc(strlen(token) + 8);
        if (!bearer) abort();
        strcpy(bearer, "Bearer ");
        strcat(bearer, token);
        kindgi_key(&headers, "Authorization");
        kindgi_begin_array(&headers);
        kindgi_write_cstring(&headers, bearer);
        kindgi_end_array(&headers);
        free(bearer);
    }
    kindgi_end_object(&headers);
    kindgi_put_(&headers, "", 1); /* NUL-terminated */
    kindgi_http_response r;
    int rc = kindgi_http(method, url, headers.b, body, body_len, &r);
    kindgi_begin_object(out);
    if (rc != 0) {
        kindgi_key(out, "reason"); kindgi_write_cstring(out, r.error_reason);
        kindgi_key(out, "message"); kindgi_write_cstring(out, r.error_message ? r.error_message : "");
    } else {
        kindgi_key(out, "status"); kindgi_write_int(out, r.status);
        kindgi_key(out, "body"); kindgi_write_string(out, r.body, r.body_len);
        size_t pos = 0;
        kindgi_json k, v;
        if (kindgi_next(kindgi_get(r.headers, "X-Seen"), &pos, &k, &v)) {
            kindgi_key(out, "seen"); kindgi_write_json(out, v);
        }
    }
    kindgi_end_object(out);
    kindgi_http_free(&r);
    free(headers.b);
    free(url); free(method); free(body); free(token);
    return KINDGI_OK;
}

const kindgi_tool kindgi_tools[] = {{"net.fetch", fetch}, {"net.offline", fetch}, {0}};
const kindgi_check kindgi_checks[] = {{0}};
