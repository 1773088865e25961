package host

// Excerpt is excerpt, for the external tests.
var Excerpt = excerpt
