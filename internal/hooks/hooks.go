// Package hooks is the seam through which package discovery, built on the
// root package's public API, reaches the little of the Session it needs
// to report to the user's Observer, without the root package exporting it:
// the Observer given with WithObserver, the RecipeInfo of a recipe named
// by the Session's WithPathNames, and the option that makes a TreeCache
// report another recipe kind. The root package sets these functions at
// init; their values are of the root package's types (*Session, Observer,
// RecipeInfo, TreeCacheOption), typed any here because this package
// cannot import the root package.
package hooks

var (
	// Observer returns the Observer a *Session was given with
	// WithObserver (nil without one, or for a nil Session).
	Observer func(session any) any
	// RecipeInfo returns a *Session's RecipeInfo of a recipe of the
	// given kind on path (relative to the namespace), named name or else
	// by the Session's WithPathNames function.
	RecipeInfo func(session any, kind, name, path string) any
	// CacheKind returns the TreeCacheOption that makes a TreeCache report
	// kind to the Observer instead of KindTreeCache.
	CacheKind func(kind string) any
)
