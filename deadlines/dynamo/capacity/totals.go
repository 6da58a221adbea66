package capacity

// Totals adds up calls.
type Totals struct {
	// Calls counts requests; Attempts what the SDK sent for them, retries included.
	Calls, Attempts int
	// Errors counts calls that failed, ConditionFailures those of them that a
	// condition refused (which still consume units).
	Errors, ConditionFailures  int
	ItemsRead, BytesRead       int
	ItemsWritten, BytesWritten int
	ReadUnits                  float64
	WriteUnits                 int
	// IndexWriteUnits are the write units of keeping global secondary indexes up to
	// date; AllWriteUnits adds them to WriteUnits.
	IndexWriteUnits int
}

// AllWriteUnits returns every write request unit billed: the tables' and their
// indexes'.
func (t Totals) AllWriteUnits() int { return t.WriteUnits + t.IndexWriteUnits }

func (t *Totals) addCall(c Call) {
	t.Calls++
	t.Attempts += c.Attempts
	if c.Err != "" {
		t.Errors++
	}
	if c.ConditionFailed {
		t.ConditionFailures++
	}
}

func (t *Totals) addUsage(u Usage) {
	t.ItemsRead += u.ItemsRead
	t.BytesRead += u.BytesRead
	t.ItemsWritten += u.ItemsWritten
	t.BytesWritten += u.BytesWritten
	t.ReadUnits += u.ReadUnits
	t.WriteUnits += u.WriteUnits
	t.IndexWriteUnits += u.IndexWriteUnits
}

// Total adds up every call.
func Total(calls []Call) Totals {
	var t Totals
	for _, c := range calls {
		t.addCall(c)
		for _, u := range c.Tables {
			t.addUsage(u)
		}
	}
	return t
}

// GroupBy adds up calls by the key of each of their usages (a call without usages,
// such as a call to another service, is keyed with a zero Usage). A call counts once
// in each group it has a usage in; its units go to the group of each usage. Calls
// whose key is "" are left out.
func GroupBy(calls []Call, key func(Call, Usage) string) map[string]Totals {
	out := map[string]Totals{}
	for _, c := range calls {
		usages := c.Tables
		if len(usages) == 0 {
			usages = []Usage{{}}
		}
		counted := map[string]bool{}
		for _, u := range usages {
			k := key(c, u)
			if k == "" {
				continue
			}
			t := out[k]
			if !counted[k] {
				t.addCall(c)
				counted[k] = true
			}
			t.addUsage(u)
			out[k] = t
		}
	}
	return out
}

// Approximations returns the reasons the units of some calls are estimates, one per
// such call; none means every unit follows the published rules.
func Approximations(calls []Call) []string {
	var out []string
	for _, c := range calls {
		if c.Approximate != "" {
			out = append(out, c.Function+" "+c.Operation+": "+c.Approximate)
		}
	}
	return out
}
