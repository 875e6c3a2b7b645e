package clab

import (
	"testing"

	"ibfab/internal/testsupport"
)

func TestMain(m *testing.M) { testsupport.VerifyTestMain(m) }
