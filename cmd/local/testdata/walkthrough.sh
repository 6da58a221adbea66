API=http://127.0.0.1:3000
RUN=$(openssl rand -hex 3)      # ids of this run's own: the walk-through runs again on the same stack
token() { curl -s -X POST $API/local/tokens -d "$1" | sed 's/.*"token":"\([^"]*\)".*/\1/'; }
rental_id() { sed 's/.*"rentalId":"\([^"]*\)".*/\1/'; }
# await RENTAL AUTH STATUS: wait, up to 10 seconds, until the rental's status is STATUS.
await() { for i in $(seq 50); do curl -s $API/rentals/$1 -H "$2" | grep -q "\"status\":\"$3\"" && return; sleep 0.2; done; echo "rental $1 not $3" >&2; return 1; }
# sign BODY: the Payment-Signature header of a webhook, as the provider signs it.
sign() { T=$(date +%s); printf 'Payment-Signature: t=%s,v1=%s' "$T" "$(printf '%s.%s' "$T" "$1" |
         openssl dgst -sha256 -hex -hmac 'local-webhook-secret-not-for-production' | sed 's/^.* //')"; }
OPS="Authorization: Bearer $(token '{"sub":"ops","operator":true}')"
ALICE="Authorization: Bearer $(token '{"sub":"alice"}')"
BOB="Authorization: Bearer $(token '{"sub":"bob"}')"
JSON='Content-Type: application/json'

curl -i -X PUT $API/bikes/bike-$RUN-1 -H "$OPS"         # 201 Created
curl -i -X PUT $API/bikes/bike-$RUN-2 -H "$ALICE"       # 403: alice is no operator
curl -i -X PUT $API/bikes/bike-$RUN-2                   # 401: no token
curl -s $API/bikes/bike-$RUN-1                          # 200 {"bikeId":"bike-…-1","available":true}

curl -i -X POST $API/rentals -H "$ALICE" -H "$JSON" \
     -H "Idempotency-Key: walk-$RUN" -d '{"bikeId":"bike-'$RUN'-1"}'          # 202 Accepted
RENTAL=$(curl -s -X POST $API/rentals -H "$ALICE" -H "$JSON" \
     -H "Idempotency-Key: walk-$RUN" -d '{"bikeId":"bike-'$RUN'-1"}' | rental_id)  # 202, the same answer again
curl -s $API/rentals/$RENTAL -H "$ALICE"                # 200 status and history
curl -s $API/rentals -H "$ALICE"                        # 200 alice's rentals, newest first
curl -i $API/rentals/$RENTAL -H "$BOB"                  # 404: not bob's

curl -s -X POST $API/rentals -H "$BOB" -H "$JSON" -d '{"bikeId":"bike-'$RUN'-1"}'   # 409: bike is not available
curl -s -X PUT $API/bikes/bike-$RUN-3 -H "$OPS"         # 201
curl -s -X POST $API/rentals -H "$ALICE" -H "$JSON" -d '{"bikeId":"bike-'$RUN'-3"}' # 409: too-many-pending-requests, until the first settles

# The process prepares the payment (status awaiting-payment). A signed webhook, as
# the payment provider sends it, confirms it:
await $RENTAL "$ALICE" awaiting-payment
BODY='{"id":"evt-'$RUN'-1","type":"payment.succeeded","paymentReference":"rp_'$RENTAL'"}'
SIG=$(sign "$BODY")
curl -s -X POST $API/webhooks/payments -H "$JSON" -H "$SIG" -d "$BODY"   # 200 {"eventId":"evt-…-1",…,"status":"confirmed"}
curl -s -X POST $API/webhooks/payments -H "$JSON" -H "$SIG" -d "$BODY"   # 200 the same answer, "duplicate":true: applied once
curl -s -X POST $API/webhooks/payments -H "$JSON" -H "$SIG" \
     -d "$(echo "$BODY" | sed s/succeeded/failed/)"      # 401: the signature binds what the body says
await $RENTAL "$ALICE" approved
curl -s $API/rentals/$RENTAL -H "$ALICE"                # 200 approved, with the process's events

# Give up on a payment by hand:
curl -s -X PUT $API/bikes/bike-$RUN-4 -H "$OPS"         # 201
R2=$(curl -s -X POST $API/rentals -H "$BOB" -H "$JSON" -d '{"bikeId":"bike-'$RUN'-4"}' | rental_id)  # 202
await $R2 "$BOB" awaiting-payment
curl -s -X POST $API/rentals/$R2/cancel-payment -H "$OPS"   # 200 {"rentalId":"…","outcome":"cancelled"}
curl -s -X POST $API/rentals/$R2/cancel-payment -H "$OPS"   # 200 {…,"outcome":"nothing-to-do"}

# Bob pays after all, a moment too late: the rental stays cancelled, and the money
# is owed back (the generic provider cannot refund):
BODY='{"id":"evt-'$RUN'-2","type":"payment.succeeded","paymentReference":"rp_'$R2'"}'
curl -s -X POST $API/webhooks/payments -H "$JSON" -H "$(sign "$BODY")" -d "$BODY"  # 200 {…,"status":"cancelled","refund":"owed"}
