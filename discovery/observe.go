package discovery

import (
	zr "github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/internal/hooks"
)

// InstancesObserver is what a ServiceCache reports to: when the Observer
// given to the Session (zkrecipes.WithObserver) also implements
// InstancesObserver, every ServiceCache (and Provider) of the Session
// calls its InstancesSeen when its view of the service's instances
// changes. The call is synchronous, from the cache's goroutine, with its
// lock held: it must be safe for concurrent use, return quickly, never
// block, and never call the Session or its recipes. The OpenTelemetry
// adapter (module github.com/zkrecipes/zkrecipes/otelzk) implements it.
type InstancesObserver interface {
	InstancesSeen(ev InstancesEvent)
}

// InstancesEvent reports the instances a discovery cache sees.
type InstancesEvent struct {
	// Recipe names the cache: Kind zkrecipes.KindDiscovery, Name what
	// the Session's zkrecipes.WithPathNames function gives for Path (the
	// service's node, relative to the namespace).
	Recipe    zr.RecipeInfo
	Service   string // the service's name
	Instances int    // the instances the cache holds
}

// instancesObserver returns the Session's Observer if it implements
// InstancesObserver, else nil.
func instancesObserver(s *zr.Session) InstancesObserver {
	o, _ := hooks.Observer(s).(InstancesObserver)
	return o
}

// recipeInfo is the RecipeInfo the Session's Observer sees for the cache
// of the service at dir.
func recipeInfo(s *zr.Session, dir string) zr.RecipeInfo {
	info, _ := hooks.RecipeInfo(s, zr.KindDiscovery, "", dir).(zr.RecipeInfo)
	return info
}

// cacheKind is the TreeCacheOption that makes a TreeCache report
// zkrecipes.KindDiscovery to the Session's Observer.
func cacheKind() zr.TreeCacheOption {
	return hooks.CacheKind(zr.KindDiscovery).(zr.TreeCacheOption)
}
