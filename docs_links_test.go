package bikerental_test

import (
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// pages are the project's documents whose relative links must resolve: the README,
// RELIABILITY.md and BENCHMARKS.md at the root, and every page under docs/ (the
// decision records included).
func pages(t *testing.T) []string {
	t.Helper()
	out := []string{"README.md", "RELIABILITY.md", "BENCHMARKS.md"}
	err := filepath.WalkDir("docs", func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".md") {
			out = append(out, path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// mdLink is a Markdown link or image, [text](target) or ![alt](target), with no
// title; mdCode is an inline code span, whose text is not a link.
var (
	mdLink   = regexp.MustCompile(`\]\(([^()\s]+)\)`)
	mdCode   = regexp.MustCompile("`[^`]*`")
	htmlID   = regexp.MustCompile(`<a id="([^"]+)"></a>`)
	headingL = regexp.MustCompile(`^#{1,6} (.+)$`)
)

// prose returns the lines of a Markdown page outside fenced code blocks, by their
// line numbers (from 1).
func prose(page string) map[int]string {
	out := map[int]string{}
	fenced := false
	for n, line := range strings.Split(page, "\n") {
		if strings.HasPrefix(line, "```") {
			fenced = !fenced
			continue
		}
		if !fenced {
			out[n+1] = line
		}
	}
	return out
}

// slug is GitHub's anchor for a heading: lower case, code marks and punctuation
// other than hyphens and underscores dropped, spaces turned into hyphens.
func slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// anchors returns every anchor a Markdown page defines: its headings' slugs (a
// repeated heading's with -1, -2, … after it, as GitHub does) and its <a id>s.
func anchors(page string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	lines := prose(page)
	for _, n := range slices.Sorted(maps.Keys(lines)) {
		line := lines[n]
		for _, m := range htmlID.FindAllStringSubmatch(line, -1) {
			out[m[1]] = true
		}
		if m := headingL.FindStringSubmatch(line); m != nil {
			s := slug(m[1])
			if n := seen[s]; n > 0 {
				out[s+"-"+strconv.Itoa(n)] = true
			} else {
				out[s] = true
			}
			seen[s]++
		}
	}
	return out
}

// TestDocumentLinksResolve: every relative link in the project's documents names a
// file or folder that exists and, with an anchor, a heading or <a id> on that page,
// so that moving a section without its links fails here rather than in a reader's
// browser.
func TestDocumentLinksResolve(t *testing.T) {
	for _, from := range pages(t) {
		text, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		for n, line := range prose(string(text)) {
			for _, m := range mdLink.FindAllStringSubmatch(mdCode.ReplaceAllString(line, ""), -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				file, anchor, _ := strings.Cut(target, "#")
				path := from
				if file != "" {
					path = filepath.Join(filepath.Dir(from), file)
				}
				if _, err := os.Stat(path); err != nil {
					t.Errorf("%s (line %d): %s: no such file", from, n, target)
					continue
				}
				if anchor == "" {
					continue
				}
				page, err := os.ReadFile(path)
				if err != nil || !strings.HasSuffix(path, ".md") {
					t.Errorf("%s (line %d): %s: an anchor into a file that is no Markdown page", from, n, target)
					continue
				}
				if !anchors(string(page))[anchor] {
					t.Errorf("%s (line %d): %s: %s has no anchor %q", from, n, target, path, anchor)
				}
			}
		}
	}
}

// readmeLines is the most lines the README may have: what the service is, a quick
// start, the walk-through and where to go next; the reference is under docs/.
const readmeLines = 400

// TestTheReadmeStaysScannable: the README is under readmeLines lines and opens with
// a table of contents that names each of its sections.
func TestTheReadmeStaysScannable(t *testing.T) {
	text, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(text), "\n"); n > readmeLines {
		t.Errorf("README.md has %d lines, more than %d: move reference material to a page under docs/", n, readmeLines)
	}
	_, contents, ok := strings.Cut(string(text), "\n## Contents\n")
	contents, _, _ = strings.Cut(contents, "\n## ")
	if !ok {
		t.Fatal("README.md has no ## Contents")
	}
	lines := prose(string(text))
	for _, n := range slices.Sorted(maps.Keys(lines)) {
		m := headingL.FindStringSubmatch(lines[n])
		if m == nil || !strings.HasPrefix(lines[n], "## ") || m[1] == "Contents" {
			continue
		}
		if !strings.Contains(contents, "](#"+slug(m[1])+")") {
			t.Errorf("README.md's contents leave out its section %q", m[1])
		}
	}
}
