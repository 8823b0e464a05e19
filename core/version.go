package core

// Version is the module's version, the one CHANGELOG.md's first entry
// describes (a test keeps the two equal). subagentctl version prints it.
const Version = "v0.3.0"
