// Package bikerental is the repository's root. It embeds template.yaml, the AWS SAM
// template, so that the local runner plays what the template declares (its routes'
// throttling) wherever it runs, from the same declaration AWS deploys.
package bikerental

import _ "embed"

// Template is template.yaml.
//
//go:embed template.yaml
var Template []byte
