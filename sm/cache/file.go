package cache

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// readLines calls each with every line of r that is not blank or a
// comment (starting with '#'), trimmed, and its fields, until one fails:
// both files are read so. Errors, each's and the reader's, are wrapped
// in errFile and name the line.
func readLines(r io.Reader, errFile error, each func(s string, fields []string) error) error {
	sc := bufio.NewScanner(r)
	line := 0
	for sc.Scan() {
		line++
		s := strings.TrimSpace(sc.Text())
		if s == "" || s[0] == '#' {
			continue
		}
		if err := each(s, strings.Fields(s)); err != nil {
			return fmt.Errorf("%w: line %d: %w", errFile, line, err)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%w: line %d: %w", errFile, line+1, err)
	}
	return nil
}

// load reads the cache file at path with read; a missing file is
// empty(), as an SM's first start has none.
func load[T any](path string, empty func() T, read func(io.Reader) (T, error)) (T, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return empty(), nil
	}
	var zero T
	if err != nil {
		return zero, err
	}
	c, err := read(bytes.NewReader(b))
	if err != nil {
		return zero, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// saveAtomic writes w's contents to a temporary file beside path, of
// mode 0600, and renames it over path: a crash never leaves half a file.
func saveAtomic(path string, w io.WriterTo) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	_, err = w.WriteTo(tmp)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}
