package samtemplate_test

import (
	"testing"
)

// kept is what the stack keeps when it is deleted or a resource replaced, for every
// resource that holds state (docs/decisions/0010-what-the-stack-keeps.md; the
// deployment guide, docs/deployment.md, says the same): "Retain", or "Delete" by choice.
var kept = map[string]string{
	// Every event: the source of truth, also under deletion protection.
	"EventsTable": "Retain",
	// Every renter's account.
	"UserPool": "Retain",
	// The to-do list, rebuilt from the events (rentalctl rebuild).
	"DeadlinesTable": "Delete",
	// Pointers into the retained Events table; rentalctl repair works from the events.
	"ProcessDeadLetterQueue":   "Delete",
	"ProjectorDeadLetterQueue": "Delete",
	"SweepDeadLetterQueue":     "Delete",
	"DeadlineDeadLetterQueue":  "Delete",
	// Logs, which expire by their retention anyway; kept, their fixed names would
	// stop the stack from being created again.
	"CommandLogGroup":       "Delete",
	"ProcessLogGroup":       "Delete",
	"ProjectorLogGroup":     "Delete",
	"SweepLogGroup":         "Delete",
	"HttpApiAccessLogGroup": "Delete",
}

// stateful are the resource types of the template that hold state.
var stateful = []string{"AWS::DynamoDB::Table", "AWS::SQS::Queue", "AWS::Logs::LogGroup", "AWS::Cognito::UserPool"}

// TestWhatTheStackKeeps checks that every resource holding state says what becomes
// of it when the stack is deleted and when the resource is replaced, and says what
// was decided.
func TestWhatTheStackKeeps(t *testing.T) {
	tpl := load(t)
	seen := map[string]bool{}
	for _, typ := range stateful {
		for _, id := range tpl.Resources(typ) {
			seen[id] = true
			want, decided := kept[id]
			if !decided {
				t.Errorf("%s (%s) holds state and nobody decided whether the stack keeps it", id, typ)
				continue
			}
			r := tpl.Resource(id)
			for _, policy := range []string{"DeletionPolicy", "UpdateReplacePolicy"} {
				if got := r.Get(policy).Str(); got != want {
					t.Errorf("%s: %s %q, want %q", id, policy, got, want)
				}
			}
		}
	}
	for id := range kept {
		if !seen[id] {
			t.Errorf("%s was decided on but is not in the template", id)
		}
	}
}
