// Package routing is what the subnet manager's routing engines work on
// and what they give: the fabric model (Fabric: a topology, where the SM
// sits in it, the LIDs of its end ports, the cables of every node), the
// route set (Routes: every switch's linear forwarding table, with the
// link directions and VL layers the checks need), the Engine interface
// and its registry (RegisterEngine, NewEngine, Engines), the engines'
// options (Options, Parent, Ties), and the verifier (Verify, and
// VerifyTables for the tables a distribution holds midway): every pair
// of end ports connected through the tables, the channel dependency graph
// of each VL layer acyclic, no down→up turn where the route set has
// directions.
//
// The engines live in packages of their own and register themselves when
// imported: sm/routing/updn (up*/down* FERa and PIRa, thesis chapter 6),
// sm/routing/minhop, sm/routing/ftree (ftree and dmodk, and the fat
// tree's up ports adaptive routing chooses from); sm/routing/multipath
// routes the LMC aliases of an engine's route set apart. Package sm
// imports them all, discovers the Fabric (its Subnet embeds one) and
// distributes the Routes.
package routing
