// The databases the tests open by URL, and their change transports.

package cdc

import _ "github.com/voltro/voltro/internal/alldrivers" // the tests open SQL stores by URL
