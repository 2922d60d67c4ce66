// Package zkrecipes provides distributed coordination recipes on Apache ZooKeeper.
package zkrecipes
