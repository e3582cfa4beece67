package release

import (
	"archive/zip"
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"
)

// Artifact is a written plugin zip and its checksums.
type Artifact struct {
	Zip, SHA256, MD5 string
}

// fixedTime keeps zips byte-identical across builds of the same files.
var fixedTime = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Package writes <outDir>/<id>-<version>.zip with every file of distDir under a top-level
// folder named after the plugin id (the layout `grafana cli plugins install` expects), plus
// .sha256 and .md5 files beside it.
func Package(distDir, outDir string) (Artifact, error) {
	m, err := ReadManifest(distDir)
	if err != nil {
		return Artifact{}, fmt.Errorf("read %s/plugin.json: %w (run the build first)", distDir, err)
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return Artifact{}, err
	}
	zipPath := filepath.Join(outDir, fmt.Sprintf("%s-%s.zip", m.ID, m.Info.Version))
	f, err := os.Create(zipPath)
	if err != nil {
		return Artifact{}, err
	}
	sha, sum5 := sha256.New(), md5.New()
	if err := writeZip(io.MultiWriter(f, sha, sum5), os.DirFS(distDir), m.ID); err != nil {
		f.Close()
		return Artifact{}, err
	}
	if err := f.Close(); err != nil {
		return Artifact{}, err
	}
	a := Artifact{Zip: zipPath, SHA256: zipPath + ".sha256", MD5: zipPath + ".md5"}
	base := filepath.Base(zipPath)
	if err := os.WriteFile(a.SHA256, []byte(hex.EncodeToString(sha.Sum(nil))+"  "+base+"\n"), 0o644); err != nil {
		return Artifact{}, err
	}
	return a, os.WriteFile(a.MD5, []byte(hex.EncodeToString(sum5.Sum(nil))+"  "+base+"\n"), 0o644)
}

func writeZip(w io.Writer, fsys fs.FS, top string) error {
	var files []string
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files = append(files, p)
		}
		return err
	})
	if err != nil {
		return err
	}
	sort.Strings(files)
	zw := zip.NewWriter(w)
	for _, p := range files {
		st, err := fs.Stat(fsys, p)
		if err != nil {
			return err
		}
		hdr := &zip.FileHeader{Name: top + "/" + p, Method: zip.Deflate, Modified: fixedTime}
		hdr.SetMode(st.Mode().Perm())
		dst, err := zw.CreateHeader(hdr)
		if err != nil {
			return err
		}
		src, err := fsys.Open(p)
		if err != nil {
			return err
		}
		_, err = io.Copy(dst, src)
		src.Close()
		if err != nil {
			return err
		}
	}
	return zw.Close()
}
