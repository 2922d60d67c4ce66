package zkrecipes

// WithCacheCompression makes a cache (TreeCache, NodeCache) hand out the
// data of its nodes gzip-decompressed, as Curator's caches made with
// dataIsCompressed (CuratorCache's COMPRESSED_DATA) do: for nodes written
// compressed, by Curator's compressed() or by a recipe of this package
// with compression on.
//
// A node whose data is not gzip (written uncompressed, or corrupt) stays
// in the cache, with its data as stored, and a warning is logged on the
// Session's logger: the cache still says truly which nodes exist and
// when they change, and a reader can tell such data by its first two
// bytes, which are not gzip's 1f 8b. (Curator's TreeCache leaves such a
// node out; its NodeCache fails the read.) Decompressed data counts for
// nothing against the request size limit, which applies to writes.
//
// Default: the Session's WithCompression (off unless set).
func WithCacheCompression(on bool) TreeCacheOption {
	return cacheOpt(func(c *treeConfig) { c.compress = &on })
}

// nodeCacheOptions applies a NodeCache's options: only
// WithCacheCompression is taken. It returns the cache's compression and
// its error (err, else the options').
func nodeCacheOptions(s *Session, err error, opts []TreeCacheOption) (compress bool, name string, _ error) {
	cfg := treeConfig{maxDepth: -1}
	for _, o := range opts {
		if o == nil {
			err = firstErr(err, invalidArg("nil TreeCacheOption"))
			continue
		}
		o.applyCache(&cfg)
	}
	if cfg.maxDepth != -1 || cfg.keep != nil || cfg.kind != "" || cfg.err != nil {
		err = firstErr(err, invalidArg("a NodeCache takes no cache option but WithCacheCompression and WithName"))
	}
	return compressionFor(s, cfg.compress), cfg.name, err
}

// decoded is a cached node's data as the cache hands it out (c.mu may be
// held): decompressed when compression is on.
func (c *TreeCache) decoded(path string, data []byte) []byte {
	return decodedCacheData(c.s, compressionFor(c.s, c.cfg.compress), path, data)
}

// decodedCacheData is data of the node at path as a cache with
// compression on holds it: decompressed, or as stored when it is not
// gzip (logged).
func decodedCacheData(s *Session, on bool, path string, data []byte) []byte {
	out, err := decodeData(on, path, data)
	if err != nil {
		s.cfg.log.Warn("zkrecipes: cache with compression on read data that is not gzip; holding it as stored", "path", path, "err", err)
		return data
	}
	return out
}
